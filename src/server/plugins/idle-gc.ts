/**
 * Memory returned once the agent has gone idle: its last reading released (src/reading.ts) and
 * no new one begun for `afterMs`. A reading at 1,000 containers leaves some 200 MiB of garbage
 * (its records, rendered answers, the scrape's text) that V8 would otherwise keep committed:
 * with nothing allocating, V8's memory reducer judges the agent busy from the allocation rate
 * it last saw, and no GC comes until its watchdog, minutes later (bench/RESULTS.md).
 *
 * Idle, V8 is told to favour memory (`--memory-saver-mode`): its memory reducer, armed by the
 * readings' own full GCs, then collects on its next check (every 8 s) with incremental and
 * concurrent marking and returns the pages, holding the thread for its final pause only. A
 * last-resort collection forced from here marks the whole heap twice inside one task, two to
 * three times longer; it is forced only where no full GC came within `graceMs` (the reducer
 * was not armed: no mark-compact grew the heap since it last ran). A regular full GC forced
 * instead would not return the pages (the young generation stays grown) nor re-arm a reducer
 * whose heap did not grow. A reading begun meanwhile cancels what is pending and turns the memory
 * saving off (under load it costs several times more GCs). Once per idle period; none at all on
 * an agent nobody asks: an idle agent does no work after this.
 *
 * The forced collector is V8's `gc` extension, enabled for contexts made from here on and taken
 * from one such context, so nothing is added to the agent's own global object and no node flag
 * is needed on the command line.
 */
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Readings } from '../../reading.js';

export const IDLE_GC_MS = 2_000;
/** the memory reducer checks every 8 s (V8's kLongDelayMs); its GC then takes a few tasks */
export const REDUCER_GRACE_MS = 10_000;

type Gc = (options?: { type?: 'major' | 'minor'; execution?: 'sync' | 'async'; flavor?: 'regular' | 'last-resort' }) => void;
let collector: Gc | null | undefined;

/** V8's full collector, or null where it cannot be had. */
export function fullGc(): Gc | null {
  if (collector === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const gc: unknown = runInNewContext('typeof gc === "function" ? gc : null');
      collector = typeof gc === 'function' ? (gc as Gc) : null;
    } catch {
      collector = null;
    }
  }
  return collector;
}

/** What the idle agent asks of the heap. */
export interface IdleHeap {
  /** V8 favours memory from now on; the probe counts the full GCs run since. */
  saveMemory(): () => number;
  /** V8's default again (favour speed); the probe stops counting. */
  restore(): void;
  /** One full, memory-reducing collection now, inside this task. */
  collect(): void;
}

/** The agent's own V8 heap, or null where the forced collector cannot be had. */
export function v8Heap(gc: Gc | null = fullGc()): IdleHeap | null {
  if (!gc) return null;
  let observer: PerformanceObserver | null = null;
  const stop = () => {
    observer?.disconnect();
    observer = null;
  };
  return {
    saveMemory() {
      stop();
      let full = 0;
      const o = (observer = new PerformanceObserver((list) => {
        for (const e of list.getEntries()) if ((e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) full++;
      }));
      o.observe({ entryTypes: ['gc'] });
      v8.setFlagsFromString('--memory-saver-mode');
      return () => full;
    },
    restore() {
      stop();
      v8.setFlagsFromString('--no-memory-saver-mode');
    },
    collect() {
      gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    },
  };
}

/**
 * Once `readings` has been idle for `afterMs`: memory saving on, and `graceMs` later, unless V8
 * ran a full GC meanwhile, one forced. A reading begun cancels what is pending.
 */
export function installIdleGc(readings: Readings, afterMs = IDLE_GC_MS, heap: IdleHeap | null = v8Heap(), graceMs = REDUCER_GRACE_MS): void {
  if (!heap) return;
  let timer: NodeJS.Timeout | null = null;
  let saving = false;
  readings.watch = {
    idle() {
      if (timer) return;
      timer = setTimeout(() => {
        const fullGcs = heap.saveMemory();
        saving = true;
        timer = setTimeout(() => {
          if (fullGcs() === 0) heap.collect();
        }, graceMs).unref();
      }, afterMs).unref();
    },
    busy() {
      if (timer) clearTimeout(timer);
      timer = null;
      if (saving) heap.restore();
      saving = false;
    },
  };
}
