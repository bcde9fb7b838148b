/**
 * A load-shed slot is given back however its request ends, through the real HTTP server:
 *
 *  - a client that goes away while its bearer token is being reviewed (--auth kubernetes,
 *    the FAKE API server holding the TokenReview until the client is gone): once the review
 *    comes back the request reaches the shedder with its response already closed; it must
 *    take no slot (its 'close' was emitted and would never give one back). Three such
 *    requests on distinct heavy routes, more than the two slots: a fourth heavy request of a
 *    well-behaved client is then served, not 503 Overloaded after the queue's wait.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request as httpRequest } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-shed-abort-'));
const fake = await new FakeKubeApiServer().start();
const kubeconfig = fake.writeKubeconfig(dir);
fake.authorize = () => ({ allowed: true, reason: 'test' });
const tokens = Array.from({ length: 8 }, (_, i) => `eyJhbGciOiJSUzI1NiJ9.shed-abort-${i}.sig`);
for (const tok of tokens) fake.tokens.set(tok, { username: `user-${tok.slice(-6)}`, groups: ['system:authenticated'] });

// TokenReviews are held while `holding`, to be let go by the test
const [handler] = fake.server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
fake.server.removeAllListeners('request');
let holding = true;
const held: (() => void)[] = [];
fake.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
  const go = () => handler!.call(fake.server, req, res);
  if (holding && req.url?.startsWith('/apis/authentication.k8s.io')) held.push(go);
  else go();
});

const agent = await testApp(['--auth', 'kubernetes', '--kubeconfig', kubeconfig, '--node-name', 'node-a', '--host-root', dir, '--listen', '127.0.0.1:7070', '--tls', 'off']);
await agent.app.listen({ host: '127.0.0.1', port: 0 });
const port = (agent.app.server.address() as AddressInfo).port;
t.teardown(async () => {
  for (const go of held.splice(0)) go();
  await agent.close();
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

const until = async (check: () => boolean, what: string) => {
  const end = Date.now() + 60_000; // hang guard
  while (!check()) {
    if (Date.now() > end) throw new Error(`hang guard: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

function get(url: string, token: string, localAddress: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: url, localAddress, agent: false, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('a request whose client left during its review takes no slot', async (t) => {
  const heavy = ['/v1/cgroups', '/v1/pods', '/v1/containers'];
  for (const [i, url] of heavy.entries()) {
    const before = held.length;
    const s = connect({ host: '127.0.0.1', port, localAddress: `127.0.0.${10 + i}` });
    s.on('error', () => {});
    s.write(`GET ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tokens[i]}\r\n\r\n`);
    await until(() => held.length > before, 'the review reaches the API server');
    s.destroy(); // the client goes away while its token is reviewed
  }
  // let the agent see the closes, then the reviews come back
  await new Promise((r) => setTimeout(r, 300));
  holding = false;
  for (const go of held.splice(0)) go();
  await until(() => fake.count('/apis/authorization.k8s.io') >= heavy.length, 'the access reviews of the three requests');
  await new Promise((r) => setTimeout(r, 300));
  const r = await get('/v1/oom', tokens[5]!, '127.0.0.20');
  t.not(JSON.parse(r.body).title, 'Overloaded', `a heavy request of another client is served, not shed: ${r.status} ${r.body.slice(0, 200)}`);
});

