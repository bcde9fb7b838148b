/**
 * sandbox-not-ready through GET /v1/triage, on a fake CRI runtime shaped as a real kubelet node
 * leaves it: the sandbox of a finished restartPolicy Never pod (its one container OOM-killed, exit
 * 137) stopped by kubelet, beside a pod whose sandbox kubelet could not get a container into.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { capturedRuntime } from '../fixtures/captured-runtime.js';
import { realNode } from '../fixtures/node-tree.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

const NS = 1_000_000_000n;
const now = BigInt(Date.now()) * 1_000_000n;
const VICTIM_UID = '55555555-5555-4555-8555-555555555555';
const BROKEN_UID = '22222222-2222-4222-8222-222222222222';
const labels = (pod: string, uid: string, container: string) => ({
  'io.kubernetes.container.name': container,
  'io.kubernetes.pod.name': pod,
  'io.kubernetes.pod.namespace': 'default',
  'io.kubernetes.pod.uid': uid,
});

const runtime = capturedRuntime(now);
runtime.pods.push(
  { id: '1'.repeat(64), name: 'oom-victim', namespace: 'default', uid: VICTIM_UID, attempt: 0, state: 'SANDBOX_NOTREADY', createdAt: now - 900n * NS },
  { id: '2'.repeat(64), name: 'api-1', namespace: 'default', uid: BROKEN_UID, attempt: 1, state: 'SANDBOX_NOTREADY', createdAt: now - 600n * NS },
);
runtime.containers.push({
  id: 'a1'.repeat(32),
  podSandboxId: '1'.repeat(64),
  name: 'hog',
  attempt: 0,
  image: 'localhost/nodetruth/busybox:test',
  state: 'CONTAINER_EXITED',
  createdAt: now - 890n * NS,
  startedAt: now - 889n * NS,
  finishedAt: now - 880n * NS,
  exitCode: 137,
  reason: 'OOMKilled',
  labels: labels('oom-victim', VICTIM_UID, 'hog'),
});

const node = realNode('systemd');
const cri = new FakeCriServer(runtime);
await cri.start();
t.teardown(async () => {
  await cri.stop();
  node.cleanup();
});
const kmsgPath = path.join(node.root, 'kmsg.txt');
writeFileSync(kmsgPath, '');

t.test('GET /v1/triage: a finished Never pod whose container was OOM-killed is not sandbox-not-ready', async (t) => {
  const agent = await testApp(['--host-root', node.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', kmsgPath, '--node-name', 'node-a']);
  t.teardown(() => agent.close());
  const res = await agent.app.inject({ method: 'GET', url: '/v1/triage?window=1s' });
  t.equal(res.statusCode, 200);
  const found = res.json().findings.filter((f: { id: string }) => f.id === 'sandbox-not-ready');
  t.same(found.map((f: { subject: { podUid: string } }) => f.subject.podUid), [BROKEN_UID], 'only the pod with no container in its sandbox');
  t.match(found[0], { title: 'default/api-1 has no ready sandbox and no running container', detail: /no containers were created in it/ });
});
