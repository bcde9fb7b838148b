/**
 * src/server/plugins/heap-growth.ts: the old generation grows HEAP_GROWING_PERCENT past what a
 * full GC kept, so what readings leave behind is collected after tens of MiB, not after several
 * times the live heap. Seen from the heap: a child process keeps a live set and makes promoted
 * garbage (what a reading leaves); bounded, the most its old space held is well below what it
 * holds with V8's own growth. A small heap may still grow MIN_GROWTH_MIB, so that one reading's
 * leavings do not make a full GC each. An operator's flag stands.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { boundHeapGrowth, growthPercent, HEAP_GROWING_PERCENT, MIN_GROWTH_MIB } from '../../../src/server/plugins/heap-growth.js';

const MODULE = path.resolve(import.meta.dirname, '../../../src/server/plugins/heap-growth.ts');

/**
 * The most the old space held during ~450 MiB of garbage made beside a ~75 MiB live set, each
 * piece kept a while so that it is promoted (as a reading's records and answers are).
 */
const CHURN = `
import v8 from 'node:v8';
if (process.argv[1] === 'bound') (await import(${JSON.stringify(MODULE)})).boundHeapGrowth([], '');
const oldUsed = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_used_size;
const block = () => Array.from({ length: 25_000 }, (_, i) => ({ i, s: 'r' + i }));
const live = Array.from({ length: 24 }, block);
const recent = [];
let most = 0;
for (let r = 0; r < 300; r++) {
  recent.push(block());
  if (recent.length > 24) recent.shift();
  if (r > 50) most = Math.max(most, oldUsed());
  // the agent's readings yield between slices; the growth is set again after each full GC then
  await new Promise((resolve) => setImmediate(resolve));
}
process.stdout.write(JSON.stringify({ oldMiB: Math.round(most / 2 ** 20), live: live.length }));
`;

const run = (mode: string) =>
  JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHURN, mode], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, timeout: 120_000 })) as { oldMiB: number };

t.test("bounded growth: the garbage collected well before V8's own growth would", async (t) => {
  const free = run('free');
  const bound = run('bound');
  t.ok(bound.oldMiB < 0.75 * free.oldMiB, `the old space held at most ${bound.oldMiB} MiB bounded, ${free.oldMiB} MiB with V8's own growth`);
});

t.test("an operator's --heap-growing-percent stands", async (t) => {
  t.equal(boundHeapGrowth(['--heap-growing-percent=300'], ''), false, 'on the command line');
  t.equal(boundHeapGrowth([], '--max-old-space-size=128 --heap_growing_percent=300'), false, 'in NODE_OPTIONS');
});

t.test("the growth: the percentage of a large heap, never less than MIN_GROWTH_MIB, at most V8's own 4 times", async (t) => {
  const MiB = 2 ** 20;
  t.equal(growthPercent(200 * MiB), HEAP_GROWING_PERCENT, '200 MiB kept: 50 % (100 MiB)');
  t.equal(growthPercent(64 * MiB), HEAP_GROWING_PERCENT, '64 MiB kept: 50 % is the floor exactly');
  t.equal(growthPercent(25 * MiB), 128, '25 MiB kept (1,000 containers between readings): 32 MiB, 128 %');
  t.ok((growthPercent(25 * MiB) / 100) * 25 >= MIN_GROWTH_MIB, 'which is at least MIN_GROWTH_MIB');
  t.equal(growthPercent(4 * MiB), 300, 'a tiny heap: 300 %, not 800 %');
  t.equal(growthPercent(0), 300);
});
