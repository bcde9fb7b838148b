/**
 * --session-token (an attach session's secret) through the real HTTP server: a listening
 * agent, real sockets, as another host-network pod on the node would reach the debug pod's
 * loopback port. Without the token, or with a wrong one: 401 problem+json, before any route
 * (unknown paths too); with it: answered; /healthz open for the kubelet's probe; the token
 * never in a log line, and a wrong one never echoed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { SESSION_HEADER } from '../../../src/server/plugins/session-secret.js';
import { testApp, type TestApp } from '../../helpers/app.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-session-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const TOKEN = randomBytes(32).toString('base64url');

async function listening(env: NodeJS.ProcessEnv): Promise<TestApp & { port: number }> {
  const a = await testApp(['--host-root', dir, '--node-name', 'node-a'], env);
  await a.app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => a.close());
  return Object.assign(a, { port: (a.app.server.address() as AddressInfo).port });
}

function get(port: number, urlPath: string, headers: Record<string, string | string[]> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

const agent = await listening({ NODETRUTH_SESSION_TOKEN: TOKEN });

t.test('without the token: 401 problem+json on every route but /healthz, unknown paths included', async (t) => {
  for (const p of ['/openapi.json', '/readyz', '/v1/node', '/v1/containers?format=text', '/metrics', '/no/such/route']) {
    const r = await get(agent.port, p);
    t.equal(r.status, 401, p);
    t.match(r.headers['content-type'], /^application\/problem\+json/, p);
    t.match(JSON.parse(r.body), { status: 401, title: 'Unauthorized', code: 'session_required', detail: /x-nodetruth-session/ }, p);
    t.match(r.headers['www-authenticate'], /Nodetruth-Session/);
  }
});

t.test('a wrong token, of any length, or sent twice: 401, and what was sent is not echoed', async (t) => {
  const wrong = randomBytes(32).toString('base64url');
  for (const [what, value] of [
    ['another session token', wrong],
    ['a prefix of it', TOKEN.slice(0, 20)],
    ['it with a suffix', `${TOKEN}x`],
    ['empty', ''],
    ['the token twice', [TOKEN, TOKEN]],
    ['as a bearer token instead', null],
  ] as const) {
    const headers: Record<string, string | string[]> = value === null ? { authorization: `Bearer ${TOKEN}` } : { [SESSION_HEADER]: value as string | string[] };
    const r = await get(agent.port, '/openapi.json', headers);
    t.equal(r.status, 401, what);
    if (typeof value === 'string' && value.length > 0) t.notOk(r.body.includes(value), `${what}: not echoed`);
  }
});

t.test('with the token: answered', async (t) => {
  const r = await get(agent.port, '/openapi.json', { [SESSION_HEADER]: TOKEN });
  t.equal(r.status, 200);
  t.ok(JSON.parse(r.body).paths, 'the OpenAPI document');
  const unknown = await get(agent.port, '/no/such/route', { [SESSION_HEADER]: TOKEN });
  t.equal(unknown.status, 404, 'an unknown route is a 404 only for the session');
});

t.test('/healthz answers without the token: the readiness probe cannot send one', async (t) => {
  const r = await get(agent.port, '/healthz');
  t.equal(r.status, 200);
  t.equal(JSON.parse(r.body).status, 'ok');
});

t.test('the token never reaches a log line (audit lines of refused and answered requests)', async (t) => {
  await get(agent.port, '/v1/node?format=text', { [SESSION_HEADER]: TOKEN });
  await get(agent.port, '/openapi.json', { [SESSION_HEADER]: `${TOKEN}-wrong` });
  // let the last audit line (written on the response's close) land
  await new Promise((r) => setTimeout(r, 50));
  const audits = agent.logs.filter((l) => l.audit);
  t.ok(audits.some((l) => (l.audit as { status: number }).status === 401), 'refusals are audited');
  t.ok(audits.some((l) => (l.audit as { route: string }).route === '/v1/node'), 'answers are audited');
  const all = agent.logs.map((l) => JSON.stringify(l)).join('\n');
  t.notOk(all.includes(TOKEN), 'no log line holds the token');
});

t.test('without --session-token nothing changes (a hand-made kubectl debug session)', async (t) => {
  const plain = await listening({});
  t.equal((await get(plain.port, '/openapi.json')).status, 200);
});

t.test('a token too short to be a secret is refused at start, without being quoted', async (t) => {
  const short = 'abc123-short';
  const err = t.throws(() => loadConfig([], { NODETRUTH_SESSION_TOKEN: short })) as Error;
  t.type(err, ConfigError);
  t.match(err.message, /--session-token/);
  t.notOk(err.message.includes(short));
  t.equal(loadConfig([], { NODETRUTH_SESSION_TOKEN: TOKEN }).config.sessionToken, TOKEN, 'the env twin sets it');
});
