/**
 * CriClient.containerEnd: ContainerStatus decoded by decode.ts for the fields a list row keeps.
 * Over real gRPC to the fake runtime, for running, exited and
 * never-started containers, with labels, annotations and a secret-named label beside the fields
 * (skipped on the wire): the same values as the full ContainerStatus gives them, int64
 * nanoseconds past 2^53 included; an unknown id fails as the full call does.
 */
import t from 'tap';
import { CriClient } from '../../../src/readers/cri/client.js';
import { FakeCriServer, generateFakeNode } from '../../helpers/fake-cri.js';

const node = generateFakeNode(10, 3);
// what the reduced decoder must step over: maps, a long message, a log path
node.containers[0]!.labels = { ...node.containers[0]!.labels, 'app.example/api-token': 'hunter2', big: 'x'.repeat(5000) };
node.containers[0]!.annotations = { 'io.kubernetes.container.hash': 'abc', note: 'y'.repeat(300) };
node.containers[0]!.logPath = '/var/log/pods/x/c0/0.log';
// created, never started: zero timestamps, no exit
node.containers[1]!.state = 'CONTAINER_CREATED';
delete node.containers[1]!.startedAt;
// an exit with a reason and a code of its own, nanoseconds that a double cannot hold
node.containers[2]!.state = 'CONTAINER_EXITED';
node.containers[2]!.exitCode = 137;
node.containers[2]!.reason = 'OOMKilled';
node.containers[2]!.finishedAt = 1_764_700_000_123_456_789n;

const fake = new FakeCriServer(node);
await fake.start();
const cri = new CriClient(fake.endpoint, 5000);
t.teardown(async () => {
  cri.close();
  await fake.stop();
});

t.test('the fields of every container as the full ContainerStatus gives them', async (t) => {
  t.ok(node.containers.some((c) => c.state === 'CONTAINER_EXITED') && node.containers.some((c) => c.state === 'CONTAINER_RUNNING'));
  for (const c of node.containers) {
    const full = await cri.containerStatus(c.id, false);
    const end = await cri.containerEnd(c.id);
    t.strictSame(
      end,
      { id: full.id, state: full.state, startedAt: full.startedAt, finishedAt: full.finishedAt, exitCode: full.exitCode, reason: full.reason },
      `${c.id.slice(0, 13)} ${c.state}`,
    );
  }
  const oom = await cri.containerEnd(node.containers[2]!.id);
  t.strictSame(oom, { id: node.containers[2]!.id, state: 'CONTAINER_EXITED', startedAt: oom.startedAt, finishedAt: '2025-12-02T18:26:40.123456789Z', exitCode: 137, reason: 'OOMKilled' });
  const created = await cri.containerEnd(node.containers[1]!.id);
  t.equal(created.startedAt, null, 'never started: no start time');
});

t.test('an id the runtime does not know: not_found, as the full call', async (t) => {
  await t.rejects(cri.containerStatus('f'.repeat(64), false), { code: 'not_found' });
  await t.rejects(cri.containerEnd('f'.repeat(64)), { code: 'not_found' });
});
