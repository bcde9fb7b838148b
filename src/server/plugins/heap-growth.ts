/**
 * How far V8 lets the old generation grow past what its last full GC kept: HEAP_GROWING_PERCENT
 * more, instead of V8's own factor (1.1 to 4 times, larger the faster its GCs ran). An agent
 * answering from readings keeps little between them (~45 MiB of heap at 1,000 containers), but
 * each reading leaves tens of MiB of records, rendered answers and Buffers behind; with V8's
 * factor they pile up to several times the live heap before a full GC, and the Buffers' memory
 * with them (a full GC is what frees a Buffer that outlived the young generation). Read by V8
 * at every full GC, so it can be set at run time, unlike the young generation's bounds.
 * An operator's own --heap-growing-percent (command line or NODE_OPTIONS) wins.
 */
import v8 from 'node:v8';

export const HEAP_GROWING_PERCENT = 50;
const OWN_FLAG = /^--heap[-_]growing[-_]percent\b/;

/** Sets the growth unless the operator did; false when the operator's flag stands. */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): boolean {
  if ([...execArgv, ...nodeOptions.split(/\s+/)].some((a) => OWN_FLAG.test(a))) return false;
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
