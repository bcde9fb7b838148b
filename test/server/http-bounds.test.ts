/**
 * The HTTP bounds through the real HTTP server (a listening app, real sockets):
 * - loopback without auth answers only loopback Host names (DNS rebinding);
 * - the audit line redacts secret query values and is bounded;
 * - one audit line per request, always: answered, 404, 400, 431, client gone,
 *   server-side deadline (504 problem+json for itself), follow streams when they end;
 * - follow streams per client, their maximum duration with a final frame.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { FakeCriServer, generateFakeNode } from '../helpers/fake-cri.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-bounds-'));
const cri = new FakeCriServer(generateFakeNode(1, 1));
await cri.start();
t.teardown(async () => {
  await cri.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function listening(flags: string[]): Promise<TestApp & { port: number }> {
  const a = await testApp(['--host-root', dir, '--node-name', 'node-a', '--cri-endpoint', cri.endpoint, '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg'), ...flags]);
  await a.app.listen({ port: 0, host: '127.0.0.1' });
  return Object.assign(a, { port: (a.app.server.address() as AddressInfo).port });
}

interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}
function request(port: number, urlPath: string, headers: Record<string, string> = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}
const audits = (a: TestApp) => a.logs.filter((l) => l.audit).map((l) => l.audit as Record<string, unknown>);
async function until(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms; // a hang guard, not a timing assertion
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

t.test('without auth, only loopback Host names (any port) and --allowed-hosts', async (t) => {
  const a = await listening(['--allowed-hosts', 'nodetruth.internal']);
  t.teardown(() => a.close());
  for (const host of ['localhost', `localhost:${a.port}`, 'localhost:18080', '127.0.0.1', '127.0.0.1:7070', '[::1]:8080', 'LOCALHOST', 'nodetruth.internal:9000']) {
    const r = await request(a.port, '/healthz', { host });
    t.equal(r.status, 200, `Host ${host}`);
  }
  // what a DNS-rebinding page sends: its own name, resolved to 127.0.0.1
  for (const host of ['evil.example', 'evil.example:7070', 'localhost.evil.example', '127.0.0.1.nip.io', '10.0.0.5:7070', 'nodetruth.internal.evil']) {
    for (const url of ['/v1/runtime', '/healthz']) {
      const r = await request(a.port, url, { host });
      t.equal(r.status, 421, `Host ${host} ${url}`);
      t.match(r.headers['content-type'], /^application\/problem\+json/);
      t.match(JSON.parse(r.body), { status: 421, code: 'misdirected', detail: /--allowed-hosts/ });
    }
  }
  const refused = audits(a).filter((l) => l.status === 421);
  t.equal(refused.length, 12, 'each refused request is audited');
});

t.test('no Host check under --auth kubernetes (tokens do that job)', async (t) => {
  const a = await testApp(['--auth', 'kubernetes', '--kubeconfig', path.join(dir, 'none'), '--host-root', dir, '--node-name', 'node-a']);
  t.teardown(() => a.close());
  const r = await a.app.inject({ method: 'GET', url: '/healthz', headers: { host: '10.0.0.5:7070' } });
  t.equal(r.statusCode, 200, 'a kubelet probe with the pod IP as Host');
});

t.test('secret query values never reach the audit line; long and many values are cut', async (t) => {
  const a = await listening([]);
  t.teardown(() => a.close());
  const secret = 'eyJhbGciOiJSUzI1NiJ9.query-secret-value.sig';
  const r = await request(a.port, `/v1/runtime?token=${secret}&access_token=${secret}&X-Api-Key=${secret}&password=${secret}&tailLines=5`);
  t.equal(r.status, 400, 'unknown query keys are refused');
  const long = 'x'.repeat(8000); // within the 16 KiB of headers, past the logged bound
  const many = Array.from({ length: 500 }, (_, i) => `k${i}=${i}`).join('&');
  t.equal((await request(a.port, `/v1/kernel?pattern=${long}`)).status, 400);
  t.equal((await request(a.port, `/v1/kernel?${many}`)).status, 400);
  await until('three audit lines', () => audits(a).length >= 3);
  const log = JSON.stringify(a.logs);
  t.notOk(log.includes('query-secret-value'), 'no secret query value in any log line');
  const [first, second, third] = audits(a) as [Record<string, Record<string, unknown>>, Record<string, Record<string, unknown>>, Record<string, unknown>];
  t.same(first.query, { token: '<redacted>', access_token: '<redacted>', 'X-Api-Key': '<redacted>', password: '<redacted>', tailLines: '5' });
  t.ok(String(second.query!.pattern).length < 400, 'a long value is cut');
  t.match(String(second.query!.pattern), /…\(/);
  t.ok(Object.keys(third.query as object).length <= 32, 'keys are capped');
  t.ok((third.omittedKeys as number) > 0, 'and the rest counted');
  t.ok(log.length < 40_000, 'the log stays small');
});

t.test('one audit line per request: answered, 404, 400, 431', async (t) => {
  const a = await listening([]);
  t.teardown(() => a.close());
  t.equal((await request(a.port, '/healthz')).status, 200);
  t.equal((await request(a.port, '/no/such/route?token=abc')).status, 404);
  t.equal((await request(a.port, '/v1/kernel?tailLines=nope')).status, 400);
  const big = await request(a.port, '/healthz', { 'x-filler': 'y'.repeat(20_000) });
  t.equal(big.status, 431);
  t.match(big.headers['content-type'], /^application\/problem\+json/);
  t.match(JSON.parse(big.body), { status: 431, code: 'headers_too_large', title: 'Request header fields too large' });
  await until('four audit lines', () => audits(a).length >= 4);
  await new Promise((r) => setTimeout(r, 100)); // nothing else may follow
  const lines = audits(a);
  t.same(lines.map((l) => l.status), [200, 404, 400, 431]);
  t.same(lines.map((l) => l.outcome), ['ok', 'ok', 'ok', 'refused-by-parser']);
  t.match(lines[1], { route: null, path: '/no/such/route', query: { token: '<redacted>' } });
});

t.test('the server-side deadline answers 504 for itself, aborts the work, and is audited once', async (t) => {
  const a = await listening(['--request-timeout', '1s', '--cri-timeout', '20s']);
  t.teardown(async () => {
    cri.delayMs = 0;
    await a.close();
  });
  cri.delayMs = 5000; // the runtime answers long after the deadline
  const r = await request(a.port, '/v1/runtime');
  t.equal(r.status, 504);
  t.match(r.headers['content-type'], /^application\/problem\+json/);
  t.match(JSON.parse(r.body), { status: 504, code: 'request_timeout', detail: /--request-timeout/ });
  await until('the audit line', () => audits(a).length >= 1);
  await new Promise((r) => setTimeout(r, 200));
  const lines = audits(a);
  t.equal(lines.length, 1, 'exactly one line');
  t.match(lines[0], { route: '/v1/runtime', status: 504, outcome: 'timeout', aborted: true });
});

t.test('a client that goes away before the answer: one audit line that says so', async (t) => {
  const a = await listening(['--cri-timeout', '20s']);
  t.teardown(async () => {
    cri.delayMs = 0;
    await a.close();
  });
  cri.delayMs = 3000;
  await new Promise<void>((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: a.port, path: '/v1/runtime', agent: false });
    req.on('error', () => resolve());
    setTimeout(() => {
      req.destroy();
      resolve();
    }, 300);
  });
  await until('the audit line', () => audits(a).length >= 1);
  await new Promise((r) => setTimeout(r, 3500)); // past the runtime's late answer: still one line
  const lines = audits(a);
  t.equal(lines.length, 1, 'exactly one line');
  t.match(lines[0], { route: '/v1/runtime', status: null, outcome: 'client-gone', aborted: true });
});

t.test('follow streams per client; the maximum duration ends a stream with a final frame; audited once at the end', async (t) => {
  const a = await listening(['--max-follows', '8', '--max-follows-per-client', '2', '--follow-max', '1s']);
  t.teardown(() => a.close());
  const open = () =>
    new Promise<{ status: number; body: Promise<string> }>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port: a.port, path: '/v1/kernel?follow=true&tailLines=1', agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        resolve({ status: res.statusCode!, body: new Promise((r) => res.on('end', () => r(body)).on('close', () => r(body))) });
      });
      req.on('error', reject);
    });
  const s1 = await open();
  const s2 = await open();
  t.equal(s1.status, 200);
  t.equal(s2.status, 200);
  const s3 = await open();
  t.equal(s3.status, 429, 'a third stream from the same address is refused');
  await s3.body;
  const [b1, b2] = await Promise.all([s1.body, s2.body]);
  for (const b of [b1, b2]) {
    const last = JSON.parse(b.trim().split('\n').at(-1)!) as { end: string; detail: string };
    t.match(last, { end: 'max-duration', detail: /--follow-max/ });
  }
  await until('three audit lines', () => audits(a).length >= 3);
  await new Promise((r) => setTimeout(r, 100));
  const lines = audits(a);
  t.equal(lines.length, 3);
  t.same(lines.map((l) => l.status).sort(), [200, 200, 429]);
  const streams = lines.filter((l) => l.status === 200);
  for (const l of streams) {
    t.match(l, { route: '/v1/kernel', followEnd: 'max-duration', outcome: 'ok' });
    t.ok((l.bytes as number) > 0, 'bytes of the stream');
    t.type(l.durationMs, 'number', 'duration of the whole stream');
  }
  t.equal((await open().then(async (s) => (await s.body, s.status))), 200, 'the slots were given back');
});
