/**
 * RuntimeView (src/sources/cri/runtime-view.ts) over a real gRPC connection to the fake CRI
 * runtime: the rows of a large node are built in slices with a yield between them, counted
 * (issue 12: 3,000 rows resumed in one tick held the loop), and the same as built at once; the
 * callers of one flight resume one a turn of the event loop.
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

t.test('the callers of one flight share its rows and resume one a turn, not all in the tick it settles', async (t) => {
  const view = new RuntimeView(cri, new RuntimeIndexSource(cri, 5000));
  const before = fake.calls.ListContainers ?? 0;
  const log: string[] = [];
  let on = true;
  const tick = () => {
    if (!on) return;
    log.push('tick');
    setImmediate(tick);
  };
  const all = Promise.all(
    [1, 2, 3, 4, 5].map(async (i) => {
      const rows = await view.containers();
      log.push(`caller${i}`);
      return rows;
    }),
  );
  setImmediate(tick);
  const got = await all;
  on = false;
  t.equal((fake.calls.ListContainers ?? 0) - before, 1, 'one ListContainers for five callers');
  t.ok(got.every((rows) => rows === got[0]), 'the same rows');
  const perTurn = log.join(' ').split('tick').map((s) => s.split(' ').filter((x) => x.startsWith('caller')).length);
  t.equal(perTurn.reduce((a, b) => a + b, 0), 5);
  t.ok(perTurn.every((n) => n <= 1), `at most ${Math.max(...perTurn)} caller resumed in one turn (${perTurn.length} turns)`);
});
