/**
 * src/server/serve-heap.ts: `serve` bounds V8's young generation unless the operator sized it,
 * without a node flag. Checked in child processes (a V8 flag cannot be unset): the same
 * allocation churn grows the new space past the bound without the hold and not with it.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { holdYoungGeneration } from '../../src/server/serve-heap.js';

const MODULE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/server/serve-heap.ts');

/** new space committed (MiB) before and after churn in a child node, with or without the hold */
const newSpaceAfterChurn = (hold: boolean): { before: number; after: number } => {
  const src = `
    const { holdYoungGeneration } = await import(${JSON.stringify(MODULE)});
    const v8 = await import('node:v8');
    const size = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
    const held = ${hold} ? holdYoungGeneration() : false;
    const before = size();
    let keep = [];
    // in turns: the bound is checked after each GC, from the event loop
    for (let turn = 0; turn < 20; turn++) {
      for (let i = 0; i < 2e5; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 20000) keep = []; }
      await new Promise((r) => setImmediate(r));
    }
    console.log(JSON.stringify({ held, before, after: size() }));`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', src], { env: { ...process.env, NODE_OPTIONS: '' } }).toString();
  return JSON.parse(out.trim().split('\n').pop()!);
};

t.test('the young generation stops growing at its bound under churn', async (t) => {
  const free = newSpaceAfterChurn(false);
  const held = newSpaceAfterChurn(true);
  t.ok(free.after > 16, `without the hold the new space grows past twice the bound (${free.before} -> ${free.after} MiB)`);
  t.ok(held.after >= 8 && held.after <= 16, `held: ${held.before} -> ${held.after} MiB (bound 8 MiB, one growth past it at most)`);
});

t.test("an operator's own semi-space flag wins", async (t) => {
  t.equal(holdYoungGeneration(['--max-semi-space-size=4'], ''), false);
  t.equal(holdYoungGeneration([], '--max-old-space-size=128 --max_semi_space_size=4'), false);
  t.equal(holdYoungGeneration([], '--semi-space-growth-factor=2'), false);
});
