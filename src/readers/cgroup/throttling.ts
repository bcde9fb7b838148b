/**
 * CPU throttling measured, not inferred: read every container's cpu.stat, wait
 * the window, read it again, and rank by the share of CFS periods that were
 * throttled in between. Counters since boot (what cpu.stat holds) hide a
 * container that started throttling a minute ago behind its quiet past.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { CpuMax, KubeCgroup } from '../../model/cgroup.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { readFilesInSync } from '../hostfs/read-sync.js';
import { type FoundCgroup, walkKubepods } from './cgroups.js';
import { readSlice } from './stats.js';
import { parseCpu, parseCpuMax, round } from './parse.js';

export interface ThrottlingEntry extends KubeCgroup {
  /** CFS periods that elapsed in the window (only counted while the cgroup had runnable work and a quota) */
  periods: number;
  throttledPeriods: number;
  /** throttledPeriods / periods; null when no period elapsed (no quota, or idle) */
  throttledShare: number | null;
  /** seconds the cgroup's threads spent throttled in the window (summed over CPUs) */
  throttledSeconds: number;
  /** CPU used in the window, in cores (usage seconds / window seconds) */
  usageCores: number;
  /** cpu.max as it is now; quotaCores "max" when unlimited */
  cpuMax: CpuMax | null;
}

export interface ThrottlingReport {
  /** the window actually measured, in ms (the requested one plus read time) */
  windowMs: number;
  entries: ThrottlingEntry[];
}

interface Sample {
  usageUsec: number;
  nrPeriods: number;
  nrThrottled: number;
  throttledUsec: number;
}

function sample(text: string | null): Sample | null {
  const cpu = parseCpu(text, null, null);
  if (cpu.usageUsec === null) return null; // gone
  return {
    usageUsec: cpu.usageUsec,
    nrPeriods: cpu.nrPeriods ?? 0,
    nrThrottled: cpu.nrThrottled ?? 0,
    throttledUsec: cpu.throttledUsec ?? 0,
  };
}

/**
 * Synchronous reads (cgroupfs never waits on a disk), in the slices of the cgroup reads (cgroups.ts).
 * A cgroup whose files cannot be read (a directory in place of cpu.stat: EISDIR) gives null
 * and is named in `warnings` once, the rest of the sweep stands.
 */
async function sweep<T>(items: readonly FoundCgroup[], fn: (c: FoundCgroup) => T, warnings: string[] | undefined, named: Set<string>): Promise<(T | null)[]> {
  const out: (T | null)[] = [];
  const slice = readSlice();
  for (let i = 0; i < items.length; i++) {
    if (slice.due()) await slice.pause();
    const c = items[i]!;
    try {
      out.push(fn(c));
    } catch (err) {
      if (!named.has(c.path)) warnings?.push(`cgroup ${c.path}: unreadable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}), skipped`);
      named.add(c.path);
      out.push(null);
    }
  }
  return out;
}

/** Sort: throttled share first (unknown last), then throttled seconds. */
function compareThrottling(a: ThrottlingEntry, b: ThrottlingEntry): number {
  const sa = a.throttledShare ?? -1;
  const sb = b.throttledShare ?? -1;
  if (sa !== sb) return sb - sa;
  return b.throttledSeconds - a.throttledSeconds;
}

export async function measureThrottling(
  fs: HostFs,
  windowMs: number,
  opts: { podUid?: string; sleep?: (ms: number) => Promise<void>; now?: () => number; signal?: AbortSignal; warnings?: string[] } = {},
): Promise<ThrottlingReport> {
  const warnings = opts.warnings;
  const all = await walkKubepods(fs, opts.podUid === undefined ? { warnings } : { podUid: opts.podUid, warnings });
  const named = new Set<string>();
  const containers = all.filter((c) => c.kind === 'container');
  const now = opts.now ?? (() => performance.now());
  // Each sample's time is the midpoint of its reads: with many cgroups a sweep takes a while.
  const s0 = now();
  const first = await sweep(containers, (c) => sample(readFilesInSync(c.dir, ['cpu.stat'], 4096)[0]!), warnings, named);
  const t0 = (s0 + now()) / 2;
  await (opts.sleep ?? ((ms) => delay(ms, undefined, opts.signal ? { signal: opts.signal } : {})))(windowMs);
  const s1 = now();
  const second = await sweep(containers, (c) => {
    const [stat, max] = readFilesInSync(c.dir, ['cpu.stat', 'cpu.max'], 4096);
    const s = sample(stat!);
    return s ? { s, max: parseCpuMax(max!) } : null;
  }, warnings, named);
  const elapsedMs = Math.max(1, (s1 + now()) / 2 - t0);
  const entries: ThrottlingEntry[] = [];
  containers.forEach((c, i) => {
    const a = first[i];
    const b = second[i];
    if (!a || !b) return; // started or vanished during the window
    const periods = Math.max(0, b.s.nrPeriods - a.nrPeriods);
    const throttledPeriods = Math.max(0, b.s.nrThrottled - a.nrThrottled);
    const { dir: _dir, ...cg } = c;
    entries.push({
      ...cg,
      periods,
      throttledPeriods,
      throttledShare: periods > 0 ? round(throttledPeriods / periods, 4) : null,
      throttledSeconds: round(Math.max(0, b.s.throttledUsec - a.throttledUsec) / 1e6, 6),
      usageCores: round(Math.max(0, b.s.usageUsec - a.usageUsec) / 1000 / elapsedMs, 4),
      cpuMax: b.max,
    });
  });
  entries.sort(compareThrottling);
  return { windowMs: Math.round(elapsedMs), entries };
}
