/**
 * /v1/containers/{id}/logs when the runtime answers: the log path comes from
 * ContainerStatus (FAKE CRI server), the file from the fixture host root; when
 * the runtime is frozen past its deadline, the same logs come from the
 * /var/log/containers links instead.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';
import { LOG_CONTAINER_ID, LOG_DIR, LOG_POD_UID, writePodLogs } from '../fixtures/podlogs.js';

const root = mkdtempSync(join(tmpdir(), 'nodetruth-logs-rt-'));
writePodLogs(root);
const now = BigInt(Date.now()) * 1_000_000n;
const POD = 'a1'.repeat(32);
const fake = new FakeCriServer({
  pods: [{ id: POD, name: 'lab', namespace: 'default', uid: LOG_POD_UID, attempt: 0, state: 'SANDBOX_READY', createdAt: now }],
  containers: [
    {
      id: LOG_CONTAINER_ID,
      podSandboxId: POD,
      name: 'oom-child',
      attempt: 1,
      image: 'busybox',
      state: 'CONTAINER_RUNNING',
      createdAt: now,
      // containerd reports the absolute host path kubelet asked for
      logPath: `${LOG_DIR}/1.log`,
    },
  ],
  images: [],
});
await fake.start();
const agent = await testApp(['--cri-endpoint', fake.endpoint, '--cri-timeout', '1s', '--host-root', root]);
t.teardown(async () => {
  await agent.close();
  await fake.stop();
  rmSync(root, { recursive: true, force: true });
});

t.test('the path from ContainerStatus, partial lines joined, tail across the live file', async (t) => {
  const res = await agent.app.inject('/v1/containers/673bde/logs?tailLines=3');
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.via, 'runtime');
  t.equal(body.containerId, LOG_CONTAINER_ID);
  t.equal(body.attempt, 1);
  t.same(
    body.entries.map((e: { message: string }) => e.message),
    ['a long line split by the runtime into three parts', '', 'ünïcödé ✓ and a tab\there'],
  );
  const prev = await agent.app.inject('/v1/containers/673bde/logs?previous=true');
  t.same(prev.json().entries.map((e: { message: string }) => e.message), ['attempt 0 started', 'attempt 0 dying']);
  t.equal(prev.json().attempt, 0);
});

t.test('frozen runtime: the same logs through /var/log/containers', async (t) => {
  fake.delayMs = 1500;
  try {
    const res = await agent.app.inject('/v1/containers/673bde83b04ced70dae6e97e90f84a7fb544cd24f1231d89a518a54f4f71f9b1/logs?tailLines=1');
    t.equal(res.statusCode, 200);
    t.not(res.json().via, 'runtime');
    t.same(res.json().entries.map((e: { message: string }) => e.message), ['ünïcödé ✓ and a tab\there']);
  } finally {
    fake.delayMs = 0;
  }
});
