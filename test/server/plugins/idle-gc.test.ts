/**
 * src/server/plugins/idle-gc.ts: once the last reading is released and none begins for a
 * while, one full GC collects what the readings left; a reading begun meanwhile cancels it;
 * nothing runs again until the next idle period. The collector is V8's, taken without a node
 * flag and without a global `gc`.
 */
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { Readings } from '../../../src/reading.js';
import { fullGc, installIdleGc } from '../../../src/server/plugins/idle-gc.js';

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));

t.test('one collection per idle period, none while readings follow each other', async (t) => {
  const rs = new Readings(0);
  let collections = 0;
  installIdleGc(rs, 40, () => void collections++);
  rs.leave(rs.enter(performance.now()));
  await sleep(10);
  rs.leave(rs.enter(performance.now())); // busy again before the collection was due: none
  await sleep(10);
  const held = rs.enter(performance.now());
  await sleep(80);
  t.equal(collections, 0, 'a reading held: no collection');
  rs.leave(held);
  await sleep(80);
  t.equal(collections, 1, 'idle: one collection');
  await sleep(80);
  t.equal(collections, 1, 'and no more while the agent stays idle');
});

t.test('what a released reading left is collected without the process asking for it', async (t) => {
  const gc = fullGc();
  t.type(gc, 'function', "V8's collector, without --expose-gc on the command line");
  t.equal((globalThis as { gc?: unknown }).gc, process.execArgv.includes('--expose-gc') ? (globalThis as { gc?: unknown }).gc : undefined, 'no global gc added');
  const rs = new Readings(0);
  installIdleGc(rs, 20);
  const r = rs.enter(performance.now());
  // what a reading keeps: an answer rendered for it, reachable only through it
  let answer: object | null = { body: 'x'.repeat(1 << 20) + String(Math.random()) };
  const left = new WeakRef(answer);
  r.once(rs, 'answer', async () => answer);
  answer = null;
  rs.leave(r);
  // nothing allocates meanwhile: without the idle collection V8 would collect nothing
  await sleep(200);
  t.equal(left.deref(), undefined, 'collected once the agent went idle');
});
