/**
 * RuntimeView (src/view/runtime-view.ts) over a real gRPC connection to the fake CRI
 * runtime: the rows of a large node are built in slices with a yield between them, counted
 * (3,000 rows resumed in one tick hold the loop too long), and the same as built at once; within a
 * reading (src/reading.ts) each container's status is asked once; across readings only an exited
 * container's status is kept (it cannot change while the container is listed).
 */
import t from 'tap';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CriClient } from '../../src/readers/cri/client.js';
import { Reading } from '../../src/reading.js';
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

t.test('within a reading every status is asked once; in the next only the running containers\' again', async (t) => {
  const view = new RuntimeView(cri, new RuntimeIndexSource(cri, 5000));
  const all = fake.node.containers.length;
  const running = fake.node.containers.filter((c) => c.state !== 'CONTAINER_EXITED').length;
  t.ok(running > 0 && running < all, 'running and exited containers');
  const asked = () => fake.calls.ContainerStatus ?? 0;
  const lists = () => fake.calls.ListContainers ?? 0;
  const [s0, l0] = [asked(), lists()];
  const r1 = new Reading();
  const [a, b] = await r1.run(() => Promise.all([view.containers(), view.containers()]));
  t.equal(await r1.run(() => view.containers()), a, 'the same rows for the whole reading');
  t.equal(a, b);
  r1.release();
  t.equal(asked() - s0, all, 'one status per container for three answers');
  t.equal(lists() - l0, 1, 'one list');
  const r2 = new Reading();
  await r2.run(() => view.containers());
  r2.release();
  t.equal(asked() - s0 - all, running, 'the next reading asks only the running containers');
});

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

t.test('once its reading is released no running container\'s status is held; an exited one is, while listed', async (t) => {
  /** every status the runtime answered, watched: a full GC clears what nothing holds */
  const answered: { state: string; ref: WeakRef<object> }[] = [];
  class Watched extends CriClient {
    override async containerEnd(id: string) {
      const status = await super.containerEnd(id);
      answered.push({ state: String(status.state), ref: new WeakRef(status) });
      return status;
    }
  }
  const watched = new Watched(fake.endpoint, 5000);
  t.teardown(() => watched.close());
  const view = new RuntimeView(watched, new RuntimeIndexSource(watched, 5000));
  const reading = new Reading();
  t.equal((await reading.run(() => view.containers())).length, 1200);
  reading.release();
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  const live = answered.filter((a) => a.state !== 'CONTAINER_EXITED');
  const exited = answered.filter((a) => a.state === 'CONTAINER_EXITED');
  t.ok(live.length > 0 && exited.length > 0, 'the fake node has running and exited containers');
  t.equal(live.filter((a) => a.ref.deref()).length, 0, `no running container's status held (${live.length} answered)`);
  t.equal(exited.filter((a) => a.ref.deref()).length, exited.length, 'every exited container\'s status still kept (it cannot change while listed)');
});
