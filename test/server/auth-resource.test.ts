/**
 * The DaemonSet's shape end to end. --auth kubernetes on a
 * non-loopback address (so TLS, self-signed), the real HTTPS server on 127.0.0.1:0, a
 * client that pins the logged fingerprint, and the FAKE API server: the
 * SubjectAccessReview asks for get nodes/nodetruth of this node, never nodes/proxy
 * (which reaches the kubelet API), and a caller holding only nodes/proxy is refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { FakeKubeApiServer, type ResourceAttributes } from '../helpers/fake-kube-apiserver.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-authres-'));
const fake = await new FakeKubeApiServer().start();
const kubeconfig = fake.writeKubeconfig(dir);
const READER = 'eyJhbGciOiJSUzI1NiJ9.reader-token.sig';
const PROXY_ONLY = 'eyJhbGciOiJSUzI1NiJ9.proxy-only-token.sig';
fake.tokens.set(READER, { username: 'alice@example.com', groups: ['oncall', 'system:authenticated'] });
fake.tokens.set(PROXY_ONLY, { username: 'bob@example.com', groups: ['system:authenticated'] });
// RBAC as deploy/daemonset/core/rbac.yaml grants it: oncall holds nodetruth-reader (get nodes/nodetruth)
fake.authorize = (r) => {
  const a = r.resourceAttributes;
  const want = (sub: string) => a.verb === 'get' && a.resource === 'nodes' && a.subresource === sub && a.name === 'node-a';
  if (r.groups.includes('oncall') && want('nodetruth')) return { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "nodetruth-reader-oncall"' };
  if (r.user === 'bob@example.com' && want('proxy')) return { allowed: true, reason: 'RBAC: allowed by ClusterRole "system:kubelet-api-admin"' };
  return { allowed: false };
};

// the DaemonSet's flags (a non-loopback address, so TLS), listening on loopback for the test
const agent = await testApp(['--listen', '0.0.0.0:7070', '--auth', 'kubernetes', '--tls', 'on', '--kubeconfig', kubeconfig, '--node-name', 'node-a', '--host-root', dir], { NODE_IP: '10.0.3.17' });
t.teardown(async () => {
  await agent.close();
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});
await agent.app.listen({ port: 0, host: '127.0.0.1' });
const port = (agent.app.server.address() as AddressInfo).port;
const fingerprint = (agent.logs.find((l) => String(l.msg).startsWith('TLS: serving')) as { tls: { fingerprint256: string } }).tls.fingerprint256;

/** GET over TLS, trusting only the certificate whose fingerprint the agent logged. */
function get(urlPath: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, agent: false, rejectUnauthorized: false, timeout: 10_000, headers: token ? { authorization: `Bearer ${token}` } : {} });
    req.on('socket', (s) =>
      (s as TLSSocket).once('secureConnect', () => {
        // checked before the request (and its token) is written
        if ((s as TLSSocket).getPeerCertificate().fingerprint256 !== fingerprint) req.destroy(new Error('not the pinned certificate'));
      }),
    );
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

const sars = () =>
  fake.requests.filter((r) => r.url.startsWith('/apis/authorization.k8s.io/v1/subjectaccessreviews')).map((r) => (r.body as { spec: { user: string; resourceAttributes: ResourceAttributes } }).spec);

t.test('the SubjectAccessReview asks for get nodes/nodetruth of this node', async (t) => {
  const r = await get('/readyz', READER);
  t.equal(r.status, 200, r.body);
  const spec = sars().find((s) => s.user === 'alice@example.com')!;
  t.same(spec.resourceAttributes, { verb: 'get', resource: 'nodes', subresource: 'nodetruth', name: 'node-a' }, 'exactly this, no namespace, no group');
  t.match(JSON.parse(r.body).tls, { enabled: true, source: 'self-signed', fingerprint256: fingerprint });
});

t.test('nodes/proxy is not what the agent checks: a caller holding only that is refused', async (t) => {
  const r = await get('/v1/runtime', PROXY_ONLY);
  t.equal(r.status, 403);
  t.match(JSON.parse(r.body), { status: 403, detail: 'user "bob@example.com" cannot get nodes/nodetruth of node "node-a"' });
  t.notOk(
    sars().some((s) => s.resourceAttributes.subresource === 'proxy'),
    'no SubjectAccessReview ever asked about nodes/proxy',
  );
});

t.test('/metrics still asks for nodes/metrics (what scrapers hold for the kubelet)', async (t) => {
  await get('/metrics', READER);
  t.ok(sars().some((s) => s.user === 'alice@example.com' && s.resourceAttributes.subresource === 'metrics'));
});

t.test('/healthz (what the probes hit) answers over TLS without a token', async (t) => {
  const r = await get('/healthz');
  t.equal(r.status, 200);
});
