/**
 * Pure parsers for cgroup v2 interface files (Documentation/admin-guide/cgroup-v2.rst,
 * "Interface Files" / "Format"). No I/O; every function takes the file's text, or
 * null when the file is missing, and returns null where there is nothing to say.
 */
import type { CpuMax, CpuStats, IoDeviceStat, Limit, MemoryEvents, MemoryStats, Psi, PsiLine } from '../../model/cgroup.js';

const int = (s: string | undefined): number | null => {
  if (s === undefined || !/^-?\d+$/.test(s)) return null;
  return Number(s);
};

/** Flat keyed: "key value" per line (memory.events, memory.stat, cpu.stat, pids.events). */
export function parseFlatKeyed(text: string | null): Map<string, number> | null {
  if (text === null) return null;
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const sp = line.indexOf(' ');
    if (sp <= 0) continue;
    const v = int(line.slice(sp + 1).trim());
    if (v !== null) out.set(line.slice(0, sp), v);
  }
  return out;
}

/** A single number (memory.current, pids.current, cpu.weight); null when missing or not a number. */
export function parseSingle(text: string | null): number | null {
  if (text === null) return null;
  return int(text.trim());
}

/** A single limit: a number, or "max" meaning unlimited (memory.max, memory.swap.max, pids.max). */
export function parseLimit(text: string | null): Limit | null {
  if (text === null) return null;
  const t = text.trim();
  return t === 'max' ? 'max' : int(t);
}

/** cpu.max: "$MAX $PERIOD", e.g. "10000 100000" or "max 100000". */
export function parseCpuMax(text: string | null): CpuMax | null {
  if (text === null) return null;
  const [q, p] = text.trim().split(/\s+/);
  const periodUsec = int(p);
  const quotaUsec = q === 'max' ? 'max' : int(q);
  if (periodUsec === null || periodUsec <= 0 || quotaUsec === null) return null;
  return {
    quotaUsec,
    periodUsec,
    quotaCores: quotaUsec === 'max' ? 'max' : round(quotaUsec / periodUsec, 4),
  };
}

/**
 * PSI (cpu.pressure, memory.pressure, io.pressure, /proc/pressure/*):
 *   some avg10=47.58 avg60=13.58 avg300=3.09 total=10277915
 *   full avg10=47.58 avg60=13.58 avg300=3.09 total=10260438
 */
export function parsePsi(text: string | null): Psi | null {
  if (text === null) return null;
  let some: PsiLine | null = null;
  let full: PsiLine | null = null;
  for (const line of text.split('\n')) {
    const [kind, ...fields] = line.trim().split(/\s+/);
    if (kind !== 'some' && kind !== 'full') continue;
    const kv = new Map(fields.map((f) => f.split('=') as [string, string]));
    const avg10 = Number(kv.get('avg10'));
    const avg60 = Number(kv.get('avg60'));
    const avg300 = Number(kv.get('avg300'));
    const total = int(kv.get('total'));
    if (![avg10, avg60, avg300].every(Number.isFinite) || total === null) continue;
    const parsed = { avg10, avg60, avg300, total };
    if (kind === 'some') some = parsed;
    else full = parsed;
  }
  return some ? { some, full } : null;
}

/** io.stat: "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0" per device. */
export function parseIoStat(text: string | null): IoDeviceStat[] | null {
  if (text === null) return null;
  const out: IoDeviceStat[] = [];
  for (const line of text.split('\n')) {
    const [device, ...fields] = line.trim().split(/\s+/);
    if (!device || !/^\d+:\d+$/.test(device)) continue;
    const kv = new Map(fields.map((f) => f.split('=') as [string, string]));
    out.push({
      device,
      rbytes: int(kv.get('rbytes')) ?? 0,
      wbytes: int(kv.get('wbytes')) ?? 0,
      rios: int(kv.get('rios')) ?? 0,
      wios: int(kv.get('wios')) ?? 0,
      // discard counters appeared in Linux 5.1; older kernels simply have none
      dbytes: int(kv.get('dbytes')) ?? 0,
      dios: int(kv.get('dios')) ?? 0,
    });
  }
  return out;
}

export function parseMemoryEvents(text: string | null): MemoryEvents | null {
  const m = parseFlatKeyed(text);
  if (m === null) return null;
  return {
    low: m.get('low') ?? null,
    high: m.get('high') ?? null,
    max: m.get('max') ?? null,
    oom: m.get('oom') ?? null,
    oomKill: m.get('oom_kill') ?? null,
    oomGroupKill: m.get('oom_group_kill') ?? null,
  };
}

/** cpu.stat (+ cpu.max, cpu.weight). Without the cpu controller, cpu.stat has only the usage keys. */
export function parseCpu(stat: string | null, max: string | null, weight: string | null): CpuStats {
  const m = parseFlatKeyed(stat);
  const g = (k: string) => m?.get(k) ?? null;
  return {
    usageUsec: g('usage_usec'),
    userUsec: g('user_usec'),
    systemUsec: g('system_usec'),
    nrPeriods: g('nr_periods'),
    nrThrottled: g('nr_throttled'),
    throttledUsec: g('throttled_usec'),
    nrBursts: g('nr_bursts'),
    burstUsec: g('burst_usec'),
    max: parseCpuMax(max),
    weight: parseSingle(weight),
  };
}

export interface MemoryFiles {
  current: string | null;
  max: string | null;
  peak: string | null;
  swapCurrent: string | null;
  swapMax: string | null;
  events: string | null;
  eventsLocal: string | null;
  stat: string | null;
}

export function parseMemory(f: MemoryFiles): MemoryStats {
  const current = parseSingle(f.current);
  const stat = parseFlatKeyed(f.stat);
  const inactiveFile = stat?.get('inactive_file') ?? null;
  return {
    current,
    max: parseLimit(f.max),
    peak: parseSingle(f.peak),
    swapCurrent: parseSingle(f.swapCurrent),
    swapMax: parseLimit(f.swapMax),
    events: parseMemoryEvents(f.events),
    eventsLocal: parseMemoryEvents(f.eventsLocal),
    anon: stat?.get('anon') ?? null,
    file: stat?.get('file') ?? null,
    activeFile: stat?.get('active_file') ?? null,
    inactiveFile,
    shmem: stat?.get('shmem') ?? null,
    workingSet: workingSet(current, inactiveFile),
  };
}

/** cAdvisor: usage minus inactive_file, never below zero; usage itself when inactive_file is unknown. */
export function workingSet(current: number | null, inactiveFile: number | null): number | null {
  if (current === null) return null;
  if (inactiveFile === null) return current;
  return Math.max(0, current - inactiveFile);
}

export const round = (x: number, digits: number): number => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};
