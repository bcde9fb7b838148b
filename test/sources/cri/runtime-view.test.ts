/**
 * RuntimeView (src/sources/cri/runtime-view.ts) over a real gRPC connection to the fake CRI
 * runtime: the rows of a large node are built in slices with a yield between them, counted
 * (issue 12: 3,000 rows resumed in one tick held the loop), and the same as built at once.
 */
import t from 'tap';
import { CriClient } from '../../../src/sources/cri/client.js';
import { RuntimeIndexSource } from '../../../src/sources/cri/index.js';
import { ROW_SLICE, RuntimeView } from '../../../src/sources/cri/runtime-view.js';
import { FakeCriServer, generateFakeNode } from '../../helpers/fake-cri.js';

const fake = new FakeCriServer(generateFakeNode(300, 4));
await fake.start();
const cri = new CriClient(fake.endpoint, 5000);
t.teardown(async () => {
  cri.close();
  await fake.stop();
});

t.test('1,200 containers: rows built in slices of at most ROW_SLICE, a yield between two', async (t) => {
  let pauses = 0;
  const view = new RuntimeView(cri, new RuntimeIndexSource(cri, 5000), async () => pauses++);
  const rows = await view.containers();
  t.equal(rows.length, 1200);
  // at least one a ROW_SLICE rows (more when a slice runs past util/turns' SLICE_MS on a slow machine)
  t.ok(pauses >= Math.ceil(1200 / ROW_SLICE) - 1, `${pauses} yields`);
  // the real yield gives the same rows
  const again = await new RuntimeView(cri, new RuntimeIndexSource(cri, 5000)).containers();
  t.same(
    again.map((r) => [r.id, r.podName, r.podUid, r.state, r.exitCode, r.startedAt]),
    rows.map((r) => [r.id, r.podName, r.podUid, r.state, r.exitCode, r.startedAt]),
  );
  const exited = rows.find((r) => r.state === 'CONTAINER_EXITED');
  t.ok(exited && exited.finishedAt !== null && exited.podName !== '', 'an exited row carries its status fields and pod');
});

t.test('one pod: its few rows in one slice, no yield', async (t) => {
  let pauses = 0;
  const view = new RuntimeView(cri, new RuntimeIndexSource(cri, 5000), async () => pauses++);
  const podId = fake.node.pods[3]!.id;
  const rows = await view.containersOf(podId);
  t.equal(rows.length, 4);
  t.ok(rows.every((r) => r.podId === podId));
  t.equal(pauses, 0);
});
