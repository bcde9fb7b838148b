/**
 * lib/turns: sliced loops resume one slice per turn of the event loop, however many run at
 * once. Turns are counted with a setImmediate ticker (one tick a turn), never timed.
 */
import t from 'tap';
import { mapSliced, nextTurn, Slice, TurnQueue } from '../../src/lib/turns.js';

/** a ticker that logs 'tick' once per turn of the event loop until stopped */
function ticker(log: string[]): () => void {
  let on = true;
  const tick = () => {
    if (!on) return;
    log.push('tick');
    setImmediate(tick);
  };
  setImmediate(tick);
  return () => (on = false);
}

/** loops a, b and c, six slices each, logging each slice and yielding through `turns` after it */
const threeLoops = (turns: TurnQueue, log: string[]) =>
  Promise.all(
    ['a', 'b', 'c'].map(async (name) => {
      for (let i = 0; i < 6; i++) {
        log.push(name);
        await turns.next();
      }
    }),
  );

t.test('three loops yielding at once, no budget: one slice per turn, not three', async (t) => {
  const log: string[] = [];
  const stop = ticker(log);
  const turns = new TurnQueue(0);
  await threeLoops(turns, log);
  stop();
  // between two ticks (two turns), at most one slice of any loop after the first turn
  const runs = log.join(' ').split('tick').slice(1).map((s) => s.trim().split(' ').filter(Boolean).length);
  t.ok(runs.length >= 17, `${runs.length} turns for 18 slices`);
  t.ok(
    runs.every((n) => n <= 1),
    `slices per turn: ${runs.join(',')}`,
  );
  t.same(log.filter((x) => x !== 'tick').length, 18);
});

t.test('with a budget, slices of several loops share a turn while it lasts, in order; none is lost', async (t) => {
  const log: string[] = [];
  const stop = ticker(log);
  const turns = new TurnQueue(Infinity);
  await threeLoops(turns, log);
  stop();
  const slices = log.filter((x) => x !== 'tick');
  t.equal(slices.length, 18);
  t.same(slices.slice(3, 9), ['a', 'b', 'c', 'a', 'b', 'c'], 'round robin');
  const runs = log.join(' ').split('tick').map((s) => s.trim().split(' ').filter(Boolean).length);
  t.ok(Math.max(...runs) >= 15, `slices per turn: ${runs.join(',')}`);
  // the default queue (TURN_MS) resumes every waiter too
  let n = 0;
  await Promise.all([1, 2, 3].map(async () => { for (let i = 0; i < 5; i++) { await nextTurn(); n++; } }));
  t.equal(n, 15);
});

t.test("nextTurn('plain') is a plain setImmediate: the loops pile up in one turn (what the queue avoids)", async (t) => {
  const log: string[] = [];
  const stop = ticker(log);
  const loop = async (name: string) => {
    for (let i = 0; i < 4; i++) {
      log.push(name);
      await nextTurn('plain');
    }
  };
  await Promise.all([loop('a'), loop('b'), loop('c')]);
  stop();
  const runs = log.join(' ').split('tick').slice(1).map((s) => s.trim().split(' ').filter(Boolean).length);
  t.ok(Math.max(...runs) >= 3, `slices per turn: ${runs.join(',')}`);
});

t.test('Slice: due after maxItems items, the item that found it due opens the next slice', async (t) => {
  let pauses = 0;
  const s = new Slice(3, 1e9, async () => pauses++);
  const slices: number[][] = [[]];
  for (let i = 0; i < 10; i++) {
    if (s.due()) {
      await s.pause();
      slices.push([]);
    }
    slices.at(-1)!.push(i);
  }
  t.same(slices, [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]);
  t.equal(pauses, 3);
});

t.test('Slice: due by time once the clock says so (a slice of slow items is cut short)', async (t) => {
  let pauses = 0;
  const s = new Slice(1000, 0, async () => pauses++);
  const busy = () => {
    const end = performance.now() + 0.2;
    while (performance.now() < end);
  };
  for (let i = 0; i < 20; i++) {
    if (s.due()) await s.pause();
    busy();
  }
  // with maxMs 0 every 4th item is due: the clock is read every 4
  t.equal(pauses, 4);
});

t.test('mapSliced: the same as map, with a pause every maxItems', async (t) => {
  let pauses = 0;
  const items = Array.from({ length: 1001 }, (_, i) => i);
  const out = await mapSliced(items, (x, i) => x * 2 + i, { maxItems: 100, maxMs: 1e9, pause: async () => pauses++ });
  t.same(out, items.map((x, i) => x * 2 + i));
  t.equal(pauses, 10);
  t.same(await mapSliced([], (x) => x), []);
});
