/**
 * RuntimeView (src/view/runtime-view.ts) over a real gRPC connection to the fake CRI
 * runtime: the rows of a large node are built in slices with a yield between them, counted
 * (3,000 rows resumed in one tick hold the loop too long), and the same as built at once; the
 * callers of one flight resume one a turn of the event loop.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CriClient } from '../../src/readers/cri/client.js';
import { RuntimeIndexSource } from '../../src/view/runtime-index.js';
import { ROW_SLICE, RuntimeView } from '../../src/view/runtime-view.js';
import { FakeCriServer, generateFakeNode } from '../helpers/fake-cri.js';

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
  // at least one a ROW_SLICE rows (more when a slice runs past lib/turns' SLICE_MS on a slow machine)
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

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

t.test('a running container\'s status is let go once it expires; an exited one is kept while listed', async (t) => {
  /** every status the runtime answered, watched: a full GC clears what nothing holds */
  const answered: { state: string; ref: WeakRef<object> }[] = [];
  class Watched extends CriClient {
    override async containerStatus(id: string, verbose = false) {
      const status = await super.containerStatus(id, verbose);
      answered.push({ state: String(status.state), ref: new WeakRef(status) });
      return status;
    }
  }
  const watched = new Watched(fake.endpoint, 5000);
  t.teardown(() => watched.close());
  const view = new RuntimeView(watched, new RuntimeIndexSource(watched, 5000));
  let rows: unknown = await view.containers();
  t.equal((rows as unknown[]).length, 1200);
  rows = undefined;
  const alive = () => {
    const live = answered.filter((a) => a.state !== 'CONTAINER_EXITED');
    const exited = answered.filter((a) => a.state === 'CONTAINER_EXITED');
    return { live: live.filter((a) => a.ref.deref()).length, liveAll: live.length, exited: exited.filter((a) => a.ref.deref()).length, exitedAll: exited.length };
  };
  t.ok(alive().liveAll > 0 && alive().exitedAll > 0, 'the fake node has running and exited containers');
  // past the 1 s a live status may be served, the sweep after it: asked every 250 ms, for up to
  // 30 s (a loaded machine runs timers late; a status held for good fails the test either way)
  let after = alive();
  for (const started = Date.now(); Date.now() - started < 30_000; ) {
    await sleep(250);
    for (let i = 0; i < 2; i++) {
      gc();
      await new Promise((r) => setImmediate(r));
    }
    after = alive();
    if (after.live === 0) break;
  }
  t.equal(after.live, 0, `no running container's status held (${after.liveAll} answered)`);
  t.equal(after.exited, after.exitedAll, 'every exited container\'s status still cached (it cannot change while listed)');
});
