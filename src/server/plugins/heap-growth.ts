/**
 * How far V8 lets the old generation grow past what its last full GC kept: HEAP_GROWING_PERCENT
 * more, and never less than MIN_GROWTH_MIB, instead of V8's own factor (1.1 to 4 times, larger
 * the faster its GCs ran). An agent answering from readings keeps little between them (~25 MiB
 * of heap at 1,000 containers), but each reading leaves tens of MiB of records, rendered answers
 * and Buffers behind; with V8's factor they pile up to several times the live heap before a full
 * GC, and the Buffers' memory with them (a full GC is what frees a Buffer that outlived the young
 * generation). With the percentage alone a small live heap would get a full GC after every
 * reading (50 % of 25 MiB is about what one /metrics leaves in the old generation); the floor
 * lets one reading's leavings wait for the next collection. Read by V8 at every full GC, so it
 * is set at run time, after each one, from the heap it kept.
 * An operator's own --heap-growing-percent (command line or NODE_OPTIONS) wins.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

export const HEAP_GROWING_PERCENT = 50;
/** the least the old generation may grow past what a full GC kept */
export const MIN_GROWTH_MIB = 32;
/** V8's own largest factor is 4 (300 % more): a tiny heap gets no more than that */
const MAX_PERCENT = 300;
const OWN_FLAG = /^--heap[-_]growing[-_]percent\b/;

/** The growth, in percent of the heap a full GC kept (`keptBytes`). */
export function growthPercent(keptBytes: number): number {
  const floor = Math.ceil(((MIN_GROWTH_MIB * 2 ** 20) / Math.max(keptBytes, 1)) * 100);
  return Math.min(MAX_PERCENT, Math.max(HEAP_GROWING_PERCENT, floor));
}

/** Sets the growth unless the operator did, and keeps it set after each full GC; false when the operator's flag stands. */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): boolean {
  if ([...execArgv, ...nodeOptions.split(/\s+/)].some((a) => OWN_FLAG.test(a))) return false;
  let set = 0;
  const update = () => {
    const percent = growthPercent(v8.getHeapStatistics().used_heap_size);
    if (percent === set) return;
    set = percent;
    v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
  };
  update();
  new PerformanceObserver((list) => {
    if (list.getEntries().some((e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) update();
  }).observe({ entryTypes: ['gc'] });
  return true;
}
