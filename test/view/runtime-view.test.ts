/**
 * RuntimeView (src/view/runtime-view.ts) over a real gRPC connection to the fake CRI
 * runtime: the rows of a large node are built in slices with a yield between them, counted
 * (3,000 rows resumed in one tick hold the loop too long), and the same as built at once; within a
 * reading (src/reading.ts) each container's status is asked once; across readings a running or
 * exited container's status is kept while it is listed in the same state (it cannot change so).
 */
import t from 'tap';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CriClient } from '../../src/readers/cri/client.js';
import { Reading } from '../../src/reading.js';
import { RuntimeIndexSource } from '../../src/view/runtime-index.js';
import { ROW_SLICE, RuntimeView } from '../../src/view/runtime-view.js';
import { type FakeContainer, FakeCriServer, generateFakeNode } from '../helpers/fake-cri.js';

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

t.test('within a reading every status is asked once; a later reading asks only new, changed or created containers', async (t) => {
  const view = new RuntimeView(cri, new RuntimeIndexSource(cri, 5000));
  const all = fake.node.containers.length;
  const asked = () => fake.calls.ContainerStatus ?? 0;
  const lists = () => fake.calls.ListContainers ?? 0;
  const read = async () => {
    const [s0, l0] = [asked(), lists()];
    const r = new Reading();
    const rows = await r.run(() => view.containers());
    r.release();
    return { rows, statuses: asked() - s0, lists: lists() - l0 };
  };
  const [s0, l0] = [asked(), lists()];
  const r1 = new Reading();
  const [a, b] = await r1.run(() => Promise.all([view.containers(), view.containers()]));
  t.equal(await r1.run(() => view.containers()), a, 'the same rows for the whole reading');
  t.equal(a, b);
  r1.release();
  t.equal(asked() - s0, all, 'one status per container for three answers');
  t.equal(lists() - l0, 1, 'one list');
  t.match(await read(), { statuses: 0, lists: 1 }, 'the next reading lists again and asks no running or exited container whose state is unchanged');

  const running = fake.node.containers.find((c) => c.state === 'CONTAINER_RUNNING')!;
  const saved = { ...running };
  Object.assign(running, { state: 'CONTAINER_EXITED', finishedAt: BigInt(Date.now()) * 1_000_000n, exitCode: 137, reason: 'OOMKilled' });
  const created: FakeContainer = { ...saved, id: 'f'.repeat(64), state: 'CONTAINER_CREATED', startedAt: undefined };
  fake.node.containers.push(created);
  t.teardown(() => {
    Object.assign(running, saved);
    fake.node.containers.splice(fake.node.containers.indexOf(created), 1);
  });
  const changed = await read();
  t.equal(changed.statuses, 2, 'the container that exited and the new created one');
  t.match(changed.rows.find((r) => r.id === running.id), { state: 'CONTAINER_EXITED', exitCode: 137, reason: 'OOMKilled' }, 'the exit shows in the next reading');
  t.match(changed.rows.find((r) => r.id === created.id), { state: 'CONTAINER_CREATED', startedAt: null });
  t.equal((await read()).statuses, 1, 'a created container is asked in every reading: it may start without its listed state having been seen to change');
});

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

t.test('a status is kept while its container is listed, and let go once it is not', async (t) => {
  /** every status the runtime answered, watched: a full GC clears what nothing holds */
  const answered: { id: string; ref: WeakRef<object> }[] = [];
  class Watched extends CriClient {
    override async containerEnd(id: string) {
      const status = await super.containerEnd(id);
      answered.push({ id, ref: new WeakRef(status) });
      return status;
    }
  }
  const watched = new Watched(fake.endpoint, 5000);
  t.teardown(() => watched.close());
  const view = new RuntimeView(watched, new RuntimeIndexSource(watched, 5000));
  const read = async () => {
    const reading = new Reading();
    const rows = await reading.run(() => view.containers());
    reading.release();
    for (let i = 0; i < 3; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    return rows;
  };
  t.equal((await read()).length, 1200);
  t.equal(answered.length, 1200);
  t.equal(answered.filter((a) => a.ref.deref()).length, 1200, 'every running and exited container\'s status kept after its reading (it cannot change while listed so)');
  const removed = fake.node.containers.splice(0, 100);
  t.teardown(() => void fake.node.containers.unshift(...removed));
  t.equal((await read()).length, 1100);
  const gone = new Set(removed.map((c) => c.id));
  t.equal(answered.filter((a) => gone.has(a.id) && a.ref.deref()).length, 0, 'no status held of the 100 containers no longer listed');
  t.equal(answered.filter((a) => a.ref.deref()).length, 1100, 'the listed ones still kept');
});
