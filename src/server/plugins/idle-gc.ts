/**
 * One full garbage collection once the agent has gone idle: its last reading released
 * (src/reading.ts) and no new one begun for `afterMs`. A reading at 1,000 containers leaves
 * some 200 MiB of garbage (its records, rendered answers, the scrape's text) that V8 would
 * otherwise keep committed: with nothing allocating, no GC comes until V8's watchdog, minutes
 * later (bench/RESULTS.md). One GC per idle period, none while readings follow each other
 * (under load the allocations drive V8's own GCs), none at all on an agent nobody asks: an
 * idle agent does no work after this one.
 *
 * The collector is V8's `gc` extension, enabled for contexts made from here on and taken from
 * one such context, so nothing is added to the agent's own global object and no node flag
 * is needed on the command line.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Readings } from '../../reading.js';

export const IDLE_GC_MS = 2_000;

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

/** Collects once `afterMs` after `readings` went idle, unless a reading begins first. */
export function installIdleGc(readings: Readings, afterMs = IDLE_GC_MS, gc: Gc | null = fullGc()): void {
  if (!gc) return;
  let timer: NodeJS.Timeout | null = null;
  readings.watch = {
    idle() {
      if (timer) return;
      timer = setTimeout(() => {
        timer = null;
        gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
      }, afterMs).unref();
    },
    busy() {
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}
