/**
 * Pure parsers for cgroup v2 interface files (Documentation/admin-guide/cgroup-v2.rst,
 * "Interface Files" / "Format"). No I/O; every function takes the file's text, or
 * null when the file is missing, and returns null where there is nothing to say.
 */
import type { CpuMax, CpuStats, IoDeviceStat, Limit, MemoryEvents, MemoryStats, Psi, PsiLine } from '../../model/cgroup.js';

/**
 * Told once per file (by name) that a line or value of it was malformed and skipped;
 * the parser keeps every well-formed line. Files are hostile input: a tenant with
 * write access to its cgroup, or a broken kernel interface, can put anything there.
 */
export type OnMalformed = () => void;

/** cgroup v2 counters are u64: 20 digits at most (a longer run is no number the kernel wrote). */
const int = (s: string | undefined): number | null => {
  if (s === undefined || !/^-?\d{1,20}$/.test(s)) return null;
  const n = Number(s);
  return Number.isFinite(n) && Math.abs(n) <= 2 ** 64 ? n : null;
};

/** A PSI average: a plain decimal (the kernel prints %lu.%02lu), never hex, exponent or empty. */
const decimal = (s: string | undefined): number => (s !== undefined && /^\d{1,10}(?:\.\d{1,4})?$/.test(s) ? Number(s) : NaN);

/** Flat keyed: "key value" per line (memory.events, memory.stat, cpu.stat, pids.events). */
export function parseFlatKeyed(text: string | null, onBad?: OnMalformed): Map<string, number> | null {
  if (text === null) return null;
  const out = new Map<string, number>();
  let bad = false;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const sp = line.indexOf(' ');
    const v = sp > 0 ? int(line.slice(sp + 1).trim()) : null;
    if (v !== null) out.set(line.slice(0, sp), v);
    else bad = true;
  }
  if (bad) onBad?.();
  return out;
}

/** A single number (memory.current, pids.current, cpu.weight); null when missing or not a number. */
export function parseSingle(text: string | null, onBad?: OnMalformed): number | null {
  if (text === null) return null;
  const v = int(text.trim());
  if (v === null) onBad?.();
  return v;
}

/** A single limit: a number, or "max" meaning unlimited (memory.max, memory.swap.max, pids.max). */
export function parseLimit(text: string | null, onBad?: OnMalformed): Limit | null {
  if (text === null) return null;
  const t = text.trim();
  if (t === 'max') return 'max';
  const v = int(t);
  if (v === null) onBad?.();
  return v;
}

/** cpu.max: "$MAX $PERIOD", e.g. "10000 100000" or "max 100000". */
export function parseCpuMax(text: string | null, onBad?: OnMalformed): CpuMax | null {
  if (text === null) return null;
  const parts = text.trim().split(/\s+/);
  const [q, p] = parts;
  const periodUsec = int(p);
  const quotaUsec = q === 'max' ? 'max' : int(q);
  if (parts.length !== 2 || periodUsec === null || periodUsec <= 0 || quotaUsec === null) {
    onBad?.();
    return null;
  }
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
export function parsePsi(text: string | null, onBad?: OnMalformed): Psi | null {
  if (text === null) return null;
  let some: PsiLine | null = null;
  let full: PsiLine | null = null;
  let bad = false;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const [kind, ...fields] = line.trim().split(/\s+/);
    if ((kind !== 'some' && kind !== 'full') || fields.length > 8) {
      bad = true;
      continue;
    }
    const kv = new Map(fields.map((f) => f.split('=') as [string, string]));
    const avg10 = decimal(kv.get('avg10'));
    const avg60 = decimal(kv.get('avg60'));
    const avg300 = decimal(kv.get('avg300'));
    const total = int(kv.get('total'));
    if (![avg10, avg60, avg300].every(Number.isFinite) || total === null || total < 0) {
      bad = true;
      continue;
    }
    const parsed = { avg10, avg60, avg300, total };
    if (kind === 'some') some = parsed;
    else full = parsed;
  }
  if (bad) onBad?.();
  return some ? { some, full } : null;
}

/** io.stat: "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0" per device. */
/** The keys of an io.stat line (a kernel with more, e.g. cost.* of iocost, has at most a dozen). */
const IO_MAX_FIELDS = 16;

export function parseIoStat(text: string | null, onBad?: OnMalformed): IoDeviceStat[] | null {
  if (text === null) return null;
  const out: IoDeviceStat[] = [];
  let bad = false;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    // split at most a few fields: a 64 KiB line of `k=v ` must not become 10,000 strings
    const [device, ...fields] = line.trim().split(/\s+/, IO_MAX_FIELDS + 2);
    if (!device || !/^\d{1,10}:\d{1,10}$/.test(device) || fields.length > IO_MAX_FIELDS) {
      bad = true;
      continue;
    }
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
  if (bad) onBad?.();
  return out;
}

export function parseMemoryEvents(text: string | null, onBad?: OnMalformed): MemoryEvents | null {
  const m = parseFlatKeyed(text, onBad);
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
export function parseCpu(stat: string | null, max: string | null, weight: string | null, onBad?: (file: string) => void): CpuStats {
  const m = parseFlatKeyed(stat, onBad && (() => onBad('cpu.stat')));
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
    max: parseCpuMax(max, onBad && (() => onBad('cpu.max'))),
    weight: parseSingle(weight, onBad && (() => onBad('cpu.weight'))),
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

export function parseMemory(f: MemoryFiles, onBad?: (file: string) => void): MemoryStats {
  const bad = (file: string) => onBad && (() => onBad(file));
  const current = parseSingle(f.current, bad('memory.current'));
  const stat = parseFlatKeyed(f.stat, bad('memory.stat'));
  const inactiveFile = stat?.get('inactive_file') ?? null;
  return {
    current,
    max: parseLimit(f.max, bad('memory.max')),
    peak: parseSingle(f.peak, bad('memory.peak')),
    swapCurrent: parseSingle(f.swapCurrent, bad('memory.swap.current')),
    swapMax: parseLimit(f.swapMax, bad('memory.swap.max')),
    events: parseMemoryEvents(f.events, bad('memory.events')),
    eventsLocal: parseMemoryEvents(f.eventsLocal, bad('memory.events.local')),
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
