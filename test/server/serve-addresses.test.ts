/**
 * `serve --listen A,B`: one server answering on every address, over real sockets, with the
 * same TLS and auth on each (the DaemonSet's node address and its loopback port for fleet's
 * port-forwards); a second address that cannot be bound fails the start and leaves the first
 * closed; the real command serves both and stops on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import { connect, createServer, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { listenOnAll } from '../../src/server/serve-addresses.js';
import { testApp } from '../helpers/app.js';
import { getText } from '../helpers/http.js';
import { freePort } from '../helpers/agent-process.js';
import { FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-listen-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** One GET over TLS (any certificate: the agent's own self-signed one), a fresh connection each time. */
function getTls(host: string, port: number, p: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get({ host, port, path: p, headers, rejectUnauthorized: false, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

t.test('loopback without auth: both addresses answer, each accepts its own Host name and refuses a stranger', async (t) => {
  const a = await testApp(['--listen', '127.0.0.1:0,127.0.0.2:0', '--host-root', dir]);
  t.teardown(() => a.close());
  const l = await listenOnAll(a.app, a.deps.config.listenAddresses, a.deps.config.maxConnections);
  t.teardown(() => l.close());
  t.equal(l.addresses.length, 2);
  const [one, two] = l.addresses;
  t.ok(one!.port > 0 && two!.port > 0 && two!.host === '127.0.0.2');
  t.equal((await getText(`http://127.0.0.1:${one!.port}/healthz`)).status, 200, 'first address');
  t.equal((await getText(`http://127.0.0.2:${two!.port}/healthz`)).status, 200, 'second address, Host 127.0.0.2 (its own name)');
  const stranger = await getText({ host: '127.0.0.2', port: two!.port, path: '/healthz', headers: { host: 'evil.example:80' } });
  t.equal(stranger.status, 421, 'the Host check holds on the second address too');
  // every request is audited alike, whichever address it came in on
  const audited = a.logs.filter((l) => l.msg === 'request').map((l) => (l.audit as { status: number }).status);
  t.same(audited, [200, 200, 421], 'each request has its audit line');
});

t.test('--auth kubernetes and TLS: the same on every address', async (t) => {
  const fake = await new FakeKubeApiServer().start();
  t.teardown(() => fake.stop());
  const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.fleet-caller.sig';
  fake.tokens.set(TOKEN, { username: 'oncall@example.com', groups: ['system:authenticated'], audiences: [] });
  fake.authorize = (r) => ({ allowed: r.user === 'oncall@example.com' && r.resourceAttributes.name === 'node-a' });
  const a = await testApp(['--listen', '127.0.0.1:0,127.0.0.2:0', '--auth', 'kubernetes', '--tls', 'on', '--kubeconfig', fake.writeKubeconfig(dir), '--node-name', 'node-a', '--host-root', dir]);
  t.teardown(() => a.close());
  const l = await listenOnAll(a.app, a.deps.config.listenAddresses, a.deps.config.maxConnections);
  t.teardown(() => l.close());
  for (const { host, port } of l.addresses) {
    t.equal((await getTls(host, port, '/healthz')).status, 200, `${host}: TLS, /healthz open`);
    t.equal((await getTls(host, port, '/readyz')).status, 401, `${host}: no token, 401`);
    t.equal((await getTls(host, port, '/readyz', { authorization: `Bearer ${TOKEN}` })).status, 200, `${host}: the caller's token reviewed, admitted`);
    await t.rejects(getText(`http://${host}:${port}/healthz`), `${host}: no plain HTTP`);
  }
});

t.test('an address that cannot be bound fails the start and closes the ones already bound', async (t) => {
  const taken = createServer().listen(0, '127.0.0.2');
  await once(taken, 'listening');
  t.teardown(() => taken.close());
  const busy = (taken.address() as AddressInfo).port;
  const a = await testApp(['--listen', `127.0.0.1:0,127.0.0.2:${busy}`, '--host-root', dir]);
  t.teardown(() => a.close());
  await t.rejects(listenOnAll(a.app, a.deps.config.listenAddresses, a.deps.config.maxConnections), { code: 'EADDRINUSE' });
  t.notOk(a.app.server.listening, 'the first address is closed again');
});

t.test('nodetruth serve --listen A,B: the real command answers on both and stops on SIGTERM', async (t) => {
  const [p1, p2] = [await freePort(), await freePort()];
  const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', cli, 'serve', '--listen', `127.0.0.1:${p1},127.0.0.2:${p2}`, '--host-root', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  // the start-up line names every address
  for (let i = 0; i < 600 && !out.includes('nodetruth serving'); i++) {
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const line = out.split('\n').find((l) => l.includes('nodetruth serving'));
  t.ok(line, line ? 'the start-up line' : `no start-up line: ${out.slice(-2000)}`);
  t.same((JSON.parse(line!) as { listen: string[] }).listen, [`127.0.0.1:${p1}`, `127.0.0.2:${p2}`]);
  t.equal((await getText(`http://127.0.0.1:${p1}/healthz`)).status, 200);
  t.equal((await getText(`http://127.0.0.2:${p2}/healthz`)).status, 200);
  child.kill('SIGTERM');
  const [code] = (await once(child, 'exit')) as [number | null];
  t.equal(code, 0, 'stopped cleanly');
});

/** One request on a fresh raw connection: 'answered' (kept open, returned to be ended) or 'closed' with no answer. */
function ask(host: string, port: number): Promise<{ got: 'answered' | 'closed'; socket: import('node:net').Socket }> {
  return new Promise((resolve) => {
    const socket = connect({ host, port }, () => socket.write(`GET /healthz HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`));
    socket.once('data', () => resolve({ got: 'answered', socket }));
    socket.once('close', () => resolve({ got: 'closed', socket }));
    socket.on('error', () => {});
  });
}

t.test('--max-connections bounds every address together', async (t) => {
  const a = await testApp(['--listen', '127.0.0.1:0,127.0.0.2:0', '--max-connections', '2', '--host-root', dir]);
  t.teardown(() => a.close());
  const l = await listenOnAll(a.app, a.deps.config.listenAddresses, a.deps.config.maxConnections);
  t.teardown(() => l.close());
  const [one, two] = l.addresses;
  // two held on the second address: the server is full, the first address refuses
  const held = [await ask('127.0.0.2', two!.port), await ask('127.0.0.2', two!.port)];
  t.same(held.map((h) => h.got), ['answered', 'answered']);
  t.equal((await ask('127.0.0.1', one!.port)).got, 'closed', 'the first address: closed with no answer');
  t.equal((await ask('127.0.0.2', two!.port)).got, 'closed', 'the second: closed with no answer');
  // one ended: room for one more, on either address
  held.pop()!.socket.destroy();
  await new Promise((r) => setTimeout(r, 100));
  const again = await ask('127.0.0.1', one!.port);
  t.equal(again.got, 'answered', 'room again after one ended');
  // now one on each: full the other way round
  t.equal((await ask('127.0.0.2', two!.port)).got, 'closed', 'held on the first address counts on the second');
  for (const h of [...held, again]) h.socket.destroy();
});

t.test('nodetruth serve --bundle FILE --listen A,B: the bundle answered on both addresses', async (t) => {
  const [p1, p2] = [await freePort(), await freePort()];
  const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
  const bundle = fileURLToPath(new URL('../../examples/fake-node.tar.gz', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', cli, 'serve', '--bundle', bundle, '--listen', `127.0.0.1:${p1},127.0.0.2:${p2}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const banner = () => out.split('\n').find((l) => l.includes('"bundle"') && l.includes('"listen"'));
  for (let i = 0; i < 600 && !banner(); i++) {
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(banner(), banner() ? 'the start-up line' : `no start-up line: ${out.slice(-2000)}`);
  t.same((JSON.parse(banner()!) as { listen: string[] }).listen, [`127.0.0.1:${p1}`, `127.0.0.2:${p2}`]);
  for (const [host, port] of [['127.0.0.1', p1], ['127.0.0.2', p2]] as const) {
    const r = await getText(`http://${host}:${port}/v1/node`);
    t.equal(r.status, 200, `${host}: the bundle's /v1/node`);
  }
  child.kill('SIGTERM');
  const [code] = (await once(child, 'exit')) as [number | null];
  t.equal(code, 0, 'stopped cleanly');
});
