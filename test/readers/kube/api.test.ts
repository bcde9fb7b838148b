/** The Kubernetes API client against the fake API server: pods on a node, reviews, deadlines, failures. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadKubeAccess, loadKubeClient, type KubeApi } from '../../../src/readers/kube/api.js';
import { AGENT_TOKEN, apiPod, FakeKubeApiServer } from '../../helpers/fake-kube-apiserver.js';

await loadKubeClient();

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-kube-'));
const fake = await new FakeKubeApiServer().start();
t.teardown(async () => {
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});
const kubeconfig = fake.writeKubeconfig(dir);

// Deadlines the tests are not about are generous: 1,203 pods through client-node's
// deserializer took over 1 s on a loaded CI machine. The hang test passes its own.
function api(timeoutMs = 30_000): KubeApi {
  const a = loadKubeAccess({ kubeconfig, env: {}, timeoutMs });
  if (!a.ok) throw new Error(a.reason);
  return a.api;
}

t.test('no access: every reason is said', async (t) => {
  const none = loadKubeAccess({ kubeconfig: null, env: {} });
  t.equal(none.ok, false);
  t.match(!none.ok && none.reason, /no cluster access: not running in a pod/);
  const missing = loadKubeAccess({ kubeconfig: path.join(dir, 'nope'), env: {} });
  t.match(!missing.ok && missing.reason, /kubeconfig .*nope does not exist/);
  const inClusterNoToken = loadKubeAccess({ kubeconfig: null, env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, tokenPath: path.join(dir, 'no-token') });
  t.equal(inClusterNoToken.ok, false, 'a service host without a token file is not access');
  const http = fake.writeKubeconfig(mkdtempSync(path.join(dir, 'h-')));
  const { readFileSync, writeFileSync } = await import('node:fs');
  writeFileSync(http, readFileSync(http, 'utf8').replace('"insecure-skip-tls-verify":true', '"insecure-skip-tls-verify":false'));
  const refused = loadKubeAccess({ kubeconfig: http, env: {} });
  t.match(!refused.ok && refused.reason, /plain http.*insecure-skip-tls-verify/);
  const ok = loadKubeAccess({ kubeconfig, env: {} });
  t.equal(ok.ok, true);
  t.match(ok.ok && ok.source, /kubeconfig .* \(context fake\)/);
});

t.test('podsOnNode sends the field selector and follows continue pages', async (t) => {
  fake.pods = [];
  for (let i = 0; i < 1203; i++) fake.pods.push(apiPod({ name: `p${i}`, uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, nodeName: 'node-a' }));
  fake.pods.push(apiPod({ name: 'elsewhere', uid: '00000000-0000-4000-8000-999999999999', nodeName: 'node-b' }));
  const before = fake.count('/api/v1/pods');
  const pods = await api().podsOnNode('node-a');
  t.equal(pods.length, 1203);
  t.equal(fake.count('/api/v1/pods') - before, 3, '500 + 500 + 203');
  const last = fake.requests.filter((r) => r.url.startsWith('/api/v1/pods')).at(-1)!;
  t.match(last.url, /fieldSelector=spec.nodeName%3Dnode-a/);
  t.match(last.url, /continue=1000/);
  t.equal(last.authorization, `Bearer ${AGENT_TOKEN}`);
  t.equal(pods[0]!.metadata!.uid, '00000000-0000-4000-8000-000000000000');
  t.ok(pods[0]!.metadata!.creationTimestamp instanceof Date, 'client-node deserializes timestamps');
});

t.test('failures become problems: 500 → 502, 403 → 503, hang → 504, closed port → 503', async (t) => {
  fake.mode.pods = 'error500';
  await t.rejects(api().podsOnNode('node-a'), { code: 'api_server_error', message: /list pods: 500 Internal error occurred: etcdserver/ });
  fake.mode.pods = 'forbidden';
  await t.rejects(api().podsOnNode('node-a'), { code: 'no_cluster_access', message: /refused nodetruth's credentials: list pods: 403 pods is forbidden/ });
  fake.mode.pods = 'hang';
  const t0 = Date.now();
  await t.rejects(api(300).podsOnNode('node-a'), { code: 'api_server_timeout', message: /did not answer list pods within 300 ms/ });
  t.comment(`hanging API server answered for in ${Date.now() - t0} ms (deadline 300 ms)`);
  fake.mode.pods = 'ok';
  const other = new FakeKubeApiServer();
  await other.start();
  const dead = other.writeKubeconfig(mkdtempSync(path.join(dir, 'd-')));
  await other.stop();
  const a = loadKubeAccess({ kubeconfig: dead, env: {}, timeoutMs: 30_000 });
  await t.rejects(a.ok ? a.api.podsOnNode('node-a') : Promise.reject(new Error('no access')), { code: 'api_server_unreachable', message: /cannot reach the Kubernetes API server .*ECONNREFUSED/ });
});

t.test('tokenReview and subjectAccessReview', async (t) => {
  fake.tokens.set('alice-token', { username: 'alice', uid: 'u-alice', groups: ['oncall', 'system:authenticated'], audiences: ['nodetruth'] });
  const ok = await api().tokenReview('alice-token', ['nodetruth']);
  t.same(ok, { authenticated: true, user: { username: 'alice', uid: 'u-alice', groups: ['oncall', 'system:authenticated'], extra: {} }, audiences: ['nodetruth'] });
  const sent = fake.requests.at(-1)!.body as { spec: { token: string; audiences: string[] } };
  t.same(sent.spec, { token: 'alice-token', audiences: ['nodetruth'] });
  const wrongAud = await api().tokenReview('alice-token', ['other']);
  t.equal(wrongAud.authenticated, false);
  const bad = await api().tokenReview('forged', []);
  t.same(bad, { authenticated: false, error: '[invalid bearer token, square/go-jose: error in cryptographic primitive]' });

  fake.authorize = (r) =>
    r.user === 'alice' && r.resourceAttributes.resource === 'nodes' && r.resourceAttributes.subresource === 'proxy' && r.resourceAttributes.name === 'node-a'
      ? { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "oncall"' }
      : { allowed: false };
  const user = ok.authenticated ? ok.user : (null as never);
  const yes = await api().subjectAccessReview(user, { verb: 'get', resource: 'nodes', subresource: 'proxy', name: 'node-a' });
  t.same(yes, { allowed: true, denied: false, reason: 'RBAC: allowed by ClusterRoleBinding "oncall"' });
  const sar = fake.requests.at(-1)!.body as { spec: object };
  t.same(sar.spec, { user: 'alice', uid: 'u-alice', groups: ['oncall', 'system:authenticated'], extra: {}, resourceAttributes: { verb: 'get', resource: 'nodes', subresource: 'proxy', name: 'node-a' } });
  const no = await api().subjectAccessReview(user, { verb: 'get', resource: 'nodes', subresource: 'proxy', name: 'node-b' });
  t.equal(no.allowed, false);
});

t.test('a failing TokenReview never carries the token in its message', async (t) => {
  fake.mode.tokenreviews = 'error500';
  const err = (await api().tokenReview('s3cret-token-value', []).catch((e: Error) => e)) as Error & { code: string };
  t.equal(err.code, 'api_server_error');
  t.notMatch(err.message, /s3cret-token-value/);
  fake.mode.tokenreviews = 'ok';
});
