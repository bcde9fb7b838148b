/**
 * src/server/plugins/idle-gc.ts: once the last reading is released and none begins for a
 * while, V8 is told to favour memory (its memory reducer then collects incrementally); only if
 * no full GC comes within the grace is one forced; a reading begun meanwhile cancels what is
 * pending and turns the memory saving off; nothing runs again until the next idle period. The
 * collector is V8's, taken without a node flag and without a global `gc`.
 */
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { Readings } from '../../../src/reading.js';
import { fullGc, installIdleGc, v8Heap, type IdleHeap } from '../../../src/server/plugins/idle-gc.js';

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
/** waits until `cond` holds or 10 s have passed (a loaded machine fires timers late) */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await sleep(10);
}

/** A heap that records what it is asked; V8's memory reducer 'armed' collects by itself. */
function fakeHeap(reducer: 'armed' | 'never') {
  const calls: string[] = [];
  const heap: IdleHeap = {
    saveMemory() {
      calls.push('save');
      return () => (reducer === 'armed' ? 1 : 0);
    },
    restore: () => void calls.push('restore'),
    collect: () => void calls.push('collect'),
  };
  return { heap, calls };
}

const expected = { armed: ['save'], never: ['save', 'collect'] };

t.test("idle: memory saving first; a forced collection only where V8's reducer did not collect", async (t) => {
  for (const reducer of ['armed', 'never'] as const) {
    const rs = new Readings(0);
    const { heap, calls } = fakeHeap(reducer);
    installIdleGc(rs, 150, heap, 60);
    rs.leave(rs.enter(performance.now()));
    await sleep(10);
    rs.leave(rs.enter(performance.now())); // busy again before anything was due: nothing
    await sleep(10);
    const held = rs.enter(performance.now());
    await sleep(120);
    t.same(calls, [], 'a reading held: nothing asked of the heap');
    rs.leave(held);
    await until(() => calls.length >= expected[reducer].length);
    await sleep(reducer === 'never' ? 0 : 300); // where more could come, give it the time
    t.same(calls, expected[reducer], `reducer ${reducer}: ${expected[reducer].join(', ')}`);
    await sleep(200);
    t.equal(calls.length, expected[reducer].length, 'and no more while the agent stays idle');
    rs.leave(rs.enter(performance.now()));
    t.same(calls.slice(-1), ['restore'], 'a reading begun: V8 favours speed again');
  }
});

t.test('a reading begun within the grace cancels the forced collection', async (t) => {
  const rs = new Readings(0);
  const { heap, calls } = fakeHeap('never');
  installIdleGc(rs, 20, heap, 2_000);
  rs.leave(rs.enter(performance.now()));
  await until(() => calls.length > 0);
  t.same(calls, ['save'], 'idle: memory saving on');
  const held = rs.enter(performance.now());
  await sleep(2_500);
  t.same(calls, ['save', 'restore'], 'busy before the grace ended: saving off, nothing forced');
  rs.leave(held);
});

t.test("V8's heap: the probe sees a full GC; what a released reading left is collected", async (t) => {
  const gc = fullGc();
  t.type(gc, 'function', "V8's collector, without --expose-gc on the command line");
  t.equal((globalThis as { gc?: unknown }).gc, process.execArgv.includes('--expose-gc') ? (globalThis as { gc?: unknown }).gc : undefined, 'no global gc added');
  const heap = v8Heap()!;
  const fullGcs = heap.saveMemory();
  const before = fullGcs();
  gc!({ type: 'major', execution: 'sync', flavor: 'regular' });
  await until(() => fullGcs() !== before);
  t.equal(fullGcs(), before + 1, 'a full GC is counted');
  heap.restore();

  const rs = new Readings(0);
  installIdleGc(rs, 20, heap, 50);
  const r = rs.enter(performance.now());
  // what a reading keeps: an answer rendered for it, reachable only through it
  let answer: object | null = { body: 'x'.repeat(1 << 20) + String(Math.random()) };
  const left = new WeakRef(answer);
  r.once(rs, 'answer', async () => answer);
  answer = null;
  rs.leave(r);
  // nothing allocates meanwhile: without the idle agent's collection V8 would collect nothing
  await until(() => left.deref() === undefined);
  t.equal(left.deref(), undefined, 'collected once the agent went idle');
  rs.leave(rs.enter(performance.now())); // busy: memory saving off again for the rest of the run
});
