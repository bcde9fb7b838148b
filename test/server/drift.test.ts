/**
 * /v1/node/drift: the fake API server's pods against a FAKE CRI runtime (it can
 * hold running and exited containers, which a read-only containerd cannot), and
 * against a real containerd (no sandboxes: every bound pod is absent).
 * Without cluster access: 503 with the reason, the rest of the agent unaffected.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { compareDrift, toApiPod } from '../../src/view/drift.js';
import { testApp } from '../helpers/app.js';
import { containerdMissing, TestContainerd } from '../helpers/containerd.js';
import { FakeCriServer, type FakeNode } from '../helpers/fake-cri.js';
import { apiPod, FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';

const NS = 1_000_000_000n;
const now = BigInt(Date.now()) * 1_000_000n;
const hex = (c: string) => c.repeat(64).slice(0, 64);
const UID = {
  web: '11111111-1111-4111-8111-111111111111',
  absent: '22222222-2222-4222-8222-222222222222',
  done: '33333333-3333-4333-8333-333333333333',
  orphan: '44444444-4444-4444-8444-444444444444',
  staticHash: '2f1ac5d2c0e6b0e6c9f3e9d5a4b3c2d1',
  mirror: '55555555-5555-4555-8555-555555555555',
};

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-drift-'));
const fake = await new FakeKubeApiServer().start();
const kubeconfig = fake.writeKubeconfig(dir);
t.teardown(async () => {
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

fake.pods = [
  apiPod({
    name: 'web-0',
    namespace: 'shop',
    uid: UID.web,
    nodeName: 'node-a',
    containers: [
      { name: 'app', id: hex('a'), state: 'running' },
      { name: 'sidecar', id: hex('b'), state: 'running' },
      { name: 'proxy', id: hex('c'), state: 'terminated', reason: 'Completed' },
      { name: 'gone', id: hex('d'), state: 'terminated', reason: 'Error' },
    ],
  }),
  apiPod({ name: 'pending-1', namespace: 'shop', uid: UID.absent, nodeName: 'node-a', phase: 'Pending', createdAt: new Date(Date.now() - 120_000).toISOString() }),
  apiPod({ name: 'job-1', namespace: 'batch', uid: UID.done, nodeName: 'node-a', phase: 'Succeeded' }),
  // a mirror pod: the API's UID differs from the static pod's, which the runtime knows
  apiPod({ name: 'etcd-node-a', namespace: 'kube-system', uid: UID.mirror, nodeName: 'node-a', annotations: { 'kubernetes.io/config.mirror': UID.staticHash, 'kubernetes.io/config.hash': UID.staticHash } }),
  apiPod({ name: 'elsewhere', namespace: 'shop', uid: '66666666-6666-4666-8666-666666666666', nodeName: 'node-b' }),
];

const node: FakeNode = {
  images: [],
  pods: [
    { id: hex('1'), name: 'web-0', namespace: 'shop', uid: UID.web, attempt: 0, state: 'SANDBOX_READY', createdAt: now - 600n * NS },
    { id: hex('2'), name: 'deleted-yesterday', namespace: 'shop', uid: UID.orphan, attempt: 0, state: 'SANDBOX_NOTREADY', createdAt: now - 86400n * NS },
    { id: hex('3'), name: 'etcd-node-a', namespace: 'kube-system', uid: UID.staticHash, attempt: 0, state: 'SANDBOX_READY', createdAt: now - 600n * NS },
  ],
  containers: [
    { id: hex('a'), podSandboxId: hex('1'), name: 'app', attempt: 0, image: 'busybox', state: 'CONTAINER_RUNNING', createdAt: now - 500n * NS },
    // the API still says running; the runtime saw it exit (PLEG lagging, or kubelet down)
    { id: hex('b'), podSandboxId: hex('1'), name: 'sidecar', attempt: 0, image: 'busybox', state: 'CONTAINER_EXITED', createdAt: now - 500n * NS, exitCode: 137, reason: 'OOMKilled', finishedAt: now - 10n * NS },
    // the API says terminated; the runtime has it running
    { id: hex('c'), podSandboxId: hex('1'), name: 'proxy', attempt: 0, image: 'busybox', state: 'CONTAINER_RUNNING', createdAt: now - 500n * NS },
    // hex('d') was garbage-collected by the runtime: terminated in the API, absent in the runtime, normal
  ],
};

t.test('against a fake CRI runtime: absent, orphan, state mismatches; static pods matched by mirror hash', async (t) => {
  const cri = new FakeCriServer(node);
  await cri.start();
  const agent = await testApp(['--kubeconfig', kubeconfig, '--node-name', 'node-a', '--cri-endpoint', cri.endpoint, '--host-root', dir]);
  t.teardown(async () => {
    await agent.close();
    await cri.stop();
  });
  const res = await agent.app.inject({ method: 'GET', url: '/v1/node/drift' });
  t.equal(res.statusCode, 200);
  const b = res.json();
  t.equal(b.nodeName, 'node-a');
  t.equal(b.apiPods, 4, 'only pods bound to node-a');
  t.equal(b.sandboxes, 3);
  t.match(b.boundButAbsent, [{ uid: UID.absent, namespace: 'shop', name: 'pending-1', phase: 'Pending', deleting: false }]);
  t.equal(b.boundButAbsent.length, 1, 'the Succeeded job and the static pod are not absent');
  t.ok(b.boundButAbsent[0].ageSeconds >= 119);
  t.same(b.orphanSandboxes, [{ id: hex('2'), uid: UID.orphan, namespace: 'shop', name: 'deleted-yesterday', state: 'SANDBOX_NOTREADY', createdAt: b.orphanSandboxes[0].createdAt }]);
  t.same(
    b.stateMismatches.map((m: Record<string, unknown>) => [m.container, m.api, m.runtime, m.exitCode, m.runtimeReason]),
    [
      ['sidecar', 'running', 'CONTAINER_EXITED', 137, 'OOMKilled'],
      ['proxy', 'terminated', 'CONTAINER_RUNNING', 0, ''],
    ],
  );
  t.equal(b.inSync, false);
  const text = await agent.app.inject({ method: 'GET', url: '/v1/node/drift?format=text' });
  t.match(text.body, /^KIND\s+OBJECT\s+POD UID\s+DETAIL\n/);
  t.match(text.body, /bound-but-absent\s+shop\/pending-1\s+2222.*API: Pending, \d+s old; runtime: no sandbox/);
  t.match(text.body, /orphan-sandbox\s+shop\/deleted-yesterday\s+4444.*sandbox 2222222222222 NotReady/);
  t.match(text.body, /state-mismatch\s+shop\/web-0\/sidecar\s+.*API: running; runtime: Exited exit 137 OOMKilled/);
  const pageCalls = fake.requests.filter((r) => r.url.startsWith('/api/v1/pods'));
  t.match(pageCalls.at(-1)!.url, /fieldSelector=spec.nodeName%3Dnode-a/);
});

t.test('without cluster access: 503 with the reason; other routes unaffected', async (t) => {
  const agent = await testApp(['--host-root', dir, '--node-name', 'node-a'], {});
  t.teardown(() => agent.close());
  const res = await agent.app.inject({ method: 'GET', url: '/v1/node/drift' });
  t.equal(res.statusCode, 503);
  t.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
  t.match(res.json(), { code: 'no_cluster_credentials', detail: /no view of the API server: no cluster access: not running in a pod/ });
  t.equal((await agent.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
});

t.test('API server failing: its error, not a crash', async (t) => {
  const cri = new FakeCriServer(node);
  await cri.start();
  const agent = await testApp(['--kubeconfig', kubeconfig, '--node-name', 'node-a', '--cri-endpoint', cri.endpoint, '--host-root', dir]);
  t.teardown(async () => {
    fake.mode.pods = 'ok';
    await agent.close();
    await cri.stop();
  });
  fake.mode.pods = 'forbidden';
  const res = await agent.app.inject({ method: 'GET', url: '/v1/node/drift' });
  t.equal(res.statusCode, 503);
  t.match(res.json().detail, /refused nodetruth's credentials: list pods: 403 pods is forbidden/);
});

t.test('pure comparison: a pod whose sandbox is being recreated is not absent; mirror UIDs', async (t) => {
  const pods = fake.pods.map((p) => toApiPod(p as never));
  t.equal(pods.find((p) => p.name === 'etcd-node-a')!.runtimeUid, UID.staticHash);
  const r = compareDrift('node-a', [], [], []);
  t.same(r, { nodeName: 'node-a', apiPods: 0, sandboxes: 0, boundButAbsent: [], orphanSandboxes: [], stateMismatches: [], inSync: true });
});

const missing = containerdMissing();
t.test('against a real containerd: every bound pod is absent (it runs no sandboxes here)', { skip: missing ?? false }, async (t) => {
  const ctrd = new TestContainerd();
  await ctrd.start();
  const agent = await testApp(['--kubeconfig', kubeconfig, '--node-name', 'node-a', '--cri-endpoint', ctrd.endpoint, '--host-root', dir]);
  t.teardown(async () => {
    await agent.close();
    await ctrd.destroy();
  });
  const b = (await agent.app.inject({ method: 'GET', url: '/v1/node/drift' })).json();
  t.equal(b.sandboxes, 0);
  t.same(b.boundButAbsent.map((p: { name: string }) => p.name).sort(), ['etcd-node-a', 'pending-1', 'web-0']);
  t.same(b.orphanSandboxes, []);
  t.same(
    b.stateMismatches.map((m: { container: string; runtime: string }) => [m.container, m.runtime]),
    [
      ['app', 'absent'],
      ['sidecar', 'absent'],
    ],
  );
});
