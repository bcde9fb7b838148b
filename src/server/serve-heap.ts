/**
 * The young generation of `serve`, held at the size it has when `serve` starts (two semi-spaces
 * of 1-2 MiB: 2 MiB each in the bundle, as `--max-semi-space-size=2` would give).
 *
 * V8 grows the semi-spaces with the allocation rate, to 32 MiB each here, and keeps them grown:
 * one reading of a 1,000-container node allocates enough to take the new space to 64-106 MiB
 * committed, most of the agent's resident memory at its peak (bench/RESULTS.md). Held small, the
 * objects of a reading that live past two scavenges go to the old space, which the idle GC
 * (plugins/idle-gc.ts) returns, and the peak under load is roughly halved, at no measured cost
 * in CPU per answer.
 *
 * Set at run time (the growth factor is read at every scavenge; the semi-space bounds only at
 * start-up), so `nodetruth serve` is lean without a node flag. An operator's own semi-space
 * flag on the command line or in NODE_OPTIONS wins.
 */
import v8 from 'node:v8';

const OWN_FLAG = /^--(max|min)[-_]semi[-_]space[-_]size|^--semi[-_]space[-_]growth[-_]factor/;

/** Whether the growth was stopped (false: the operator sized the young generation). */
export function holdYoungGeneration(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): boolean {
  if ([...execArgv, ...nodeOptions.split(/\s+/)].some((a) => OWN_FLAG.test(a))) return false;
  v8.setFlagsFromString('--semi-space-growth-factor=1');
  return true;
}
