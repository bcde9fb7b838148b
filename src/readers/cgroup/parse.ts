/**
 * Pure parsers for cgroup v2 interface files (Documentation/admin-guide/cgroup-v2.rst,
 * "Interface Files" / "Format"). No I/O.
 *
 * Written once, over bytes: the reader (cgroups.ts) hands them the one read buffer
 * as it is (`b`, from `s` to `e`), so a scrape of 1,500 cgroups makes no string per
 * file, per line or per key; the string entry points below (parsePsi(text), ...)
 * are the same code over the text's UTF-8 bytes (the scanning itself is bytes.ts). Only the keys a record holds are
 * kept; every other line is still checked, so a malformed one is told (OnMalformed)
 * whichever key it carries.
 *
 * Files are hostile input (a tenant with write access to its cgroup, or a broken
 * kernel interface, can put anything there): whitespace is ASCII only, numbers are
 * at most 20 digits (cgroup counters are u64), a line that does not parse is
 * skipped and the rest kept.
 */
import type { CpuMax, CpuStats, IoDeviceStat, Limit, MemoryEvents, MemoryStats, Psi, PsiLine } from '../../model/cgroup.js';
import { type Bytes, decimalAt, intAt, isMax, type Keys, keys, lineAt, nextLine, orNull, scanFields, scanFlatKeyed, trimEnd, trimStart, type ValueAt, wordEnd } from './bytes.js';

/**
 * Told once per file that a line or value of it was malformed and skipped;
 * the parser keeps every well-formed line.
 */
type OnMalformed = () => void;

/** A single number (memory.current, pids.current, cpu.weight); null when not a number. */
export function singleAt(b: Bytes, s: number, e: number, onBad?: OnMalformed): number | null {
  const v = intAt(b, trimStart(b, s, e), trimEnd(b, s, e));
  if (v !== v) onBad?.();
  return orNull(v);
}

/** A single limit: a number, or "max" meaning unlimited (memory.max, memory.high, memory.swap.max, pids.max). */
export function limitAt(b: Bytes, s: number, e: number, onBad?: OnMalformed): Limit | null {
  const ts = trimStart(b, s, e);
  const te = trimEnd(b, ts, e);
  return isMax(b, ts, te) ? 'max' : singleAt(b, ts, te, onBad);
}

/** cpu.max: "$MAX $PERIOD", e.g. "10000 100000" or "max 100000". */
export function cpuMaxAt(b: Bytes, s: number, e: number, onBad?: OnMalformed): CpuMax | null {
  const qs = trimStart(b, s, e);
  const end = trimEnd(b, qs, e);
  const qe = wordEnd(b, qs, end);
  const ps = trimStart(b, qe, end);
  const pe = wordEnd(b, ps, end);
  const periodUsec = pe === end && ps > qe ? intAt(b, ps, pe) : NaN;
  const quotaUsec: Limit = isMax(b, qs, qe) ? 'max' : intAt(b, qs, qe);
  if (!(periodUsec > 0) || quotaUsec !== quotaUsec) {
    onBad?.();
    return null;
  }
  return { quotaUsec, periodUsec, quotaCores: quotaUsec === 'max' ? 'max' : round(quotaUsec / periodUsec, 4) };
}

const PSI_KEYS = keys('avg10', 'avg60', 'avg300', 'total');
const PSI_VALUE: readonly ValueAt[] = [decimalAt, decimalAt, decimalAt, intAt];
/** A PSI line has 4 fields; a kernel with more would have a few (a long run of them is junk). */
const PSI_MAX_FIELDS = 8;
const psiVals = new Float64Array(PSI_KEYS.length);

/** 1 for "some", 2 for "full", 0 otherwise. */
const psiKind = (b: Bytes, i: number, e: number) =>
  e - i !== 4 ? 0 : b[i] === 0x73 && b[i + 1] === 0x6f && b[i + 2] === 0x6d && b[i + 3] === 0x65 ? 1 : b[i] === 0x66 && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c ? 2 : 0;

/**
 * PSI (cpu.pressure, memory.pressure, io.pressure, /proc/pressure/*):
 *   some avg10=47.58 avg60=13.58 avg300=3.09 total=10277915
 *   full avg10=47.58 avg60=13.58 avg300=3.09 total=10260438
 * A line missing a key or with a bad value is skipped whole; null without a `some` line.
 */
export function psiAt(b: Bytes, s: number, e: number, onBad?: OnMalformed): Psi | null {
  let some: PsiLine | null = null;
  let full: PsiLine | null = null;
  let bad = false;
  for (const l = lineAt(s); nextLine(b, e, l); ) {
    const kind = psiKind(b, l.start, l.word);
    // "avg10" without a value counts as a bad one, as a later "avg10=1" counts as the value
    if (kind === 0 || !scanFields(b, l.word, l.end, PSI_KEYS, PSI_VALUE, PSI_MAX_FIELDS, psiVals)) {
      bad = true;
      continue;
    }
    const avg10 = psiVals[0]!;
    const avg60 = psiVals[1]!;
    const avg300 = psiVals[2]!;
    const total = psiVals[3]!;
    if (avg10 !== avg10 || avg60 !== avg60 || avg300 !== avg300 || !(total >= 0)) {
      bad = true;
      continue;
    }
    const parsed = { avg10, avg60, avg300, total };
    if (kind === 1) some = parsed;
    else full = parsed;
  }
  if (bad) onBad?.();
  return some ? { some, full } : null;
}

/** The keys of an io.stat line (a kernel with more, e.g. cost.* of iocost, has at most a dozen). */
const IO_MAX_FIELDS = 16;
const IO_KEYS = keys('rbytes', 'wbytes', 'rios', 'wios', 'dbytes', 'dios');
const IO_VALUE: readonly ValueAt[] = IO_KEYS.map(() => intAt);
const ioVals = new Float64Array(IO_KEYS.length);
const COLON = 0x3a;

/** The device of an io.stat line, major:minor, at most 10 digits each. */
function isDevice(b: Bytes, s: number, e: number): boolean {
  let colon = -1;
  for (let i = s; i < e; i++) {
    if (b[i] === COLON && colon < 0) colon = i;
    else if (b[i]! < 48 || b[i]! > 57) return false;
  }
  return colon - s >= 1 && colon - s <= 10 && e - colon - 1 >= 1 && e - colon - 1 <= 10;
}

/** io.stat: "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0" per device. */
export function ioStatAt(b: Bytes, s: number, e: number, onBad?: OnMalformed): IoDeviceStat[] {
  const out: IoDeviceStat[] = [];
  let bad = false;
  for (const l = lineAt(s); nextLine(b, e, l); ) {
    const ds = l.start;
    const de = l.word;
    if (!scanFields(b, de, l.end, IO_KEYS, IO_VALUE, IO_MAX_FIELDS, ioVals) || !isDevice(b, ds, de)) {
      bad = true;
      continue;
    }
    // discard counters appeared in Linux 5.1; older kernels simply have none (0, as a bad value)
    const v = (k: number) => orNull(ioVals[k]!) ?? 0;
    out.push({ device: Buffer.from(b.buffer, b.byteOffset + ds, de - ds).toString('latin1'), rbytes: v(0), wbytes: v(1), rios: v(2), wios: v(3), dbytes: v(4), dios: v(5) });
  }
  if (bad) onBad?.();
  return out;
}

/** The fields of a record that hold a counter (number, or null when unknown). */
type CounterField<T> = { [K in keyof T]-?: T[K] extends number | null ? (null extends T[K] ? K : never) : never }[keyof T];

/** A flat keyed file's keys, each with the record field it fills, as one table. */
interface FlatTable<T> {
  keys: Keys;
  fields: readonly CounterField<T>[];
}
const flatTable = <T>(table: Record<string, CounterField<T>>): FlatTable<T> => ({ keys: keys(...Object.keys(table)), fields: Object.values(table) });

const MEMORY_EVENTS = flatTable<MemoryEvents>({ low: 'low', high: 'high', max: 'max', oom: 'oom', oom_kill: 'oomKill', oom_group_kill: 'oomGroupKill' });
/** The memory.stat keys a record holds (of ~40). */
const MEMORY_STAT = flatTable<MemoryStats>({ anon: 'anon', file: 'file', active_file: 'activeFile', inactive_file: 'inactiveFile', shmem: 'shmem' });
const CPU_STAT = flatTable<CpuStats>({
  usage_usec: 'usageUsec',
  user_usec: 'userUsec',
  system_usec: 'systemUsec',
  nr_periods: 'nrPeriods',
  nr_throttled: 'nrThrottled',
  throttled_usec: 'throttledUsec',
  nr_bursts: 'nrBursts',
  burst_usec: 'burstUsec',
});
const flatVals = new Float64Array(8);

/** The table's keys of b[s, e) into `into`'s fields (null where missing). */
function flatInto<T>(into: T, table: FlatTable<T>, b: Bytes, s: number, e: number, onBad?: OnMalformed): T {
  if (scanFlatKeyed(b, s, e, table.keys, flatVals)) onBad?.();
  const record = into as Record<CounterField<T>, number | null>;
  for (let k = 0; k < table.fields.length; k++) record[table.fields[k]!] = orNull(flatVals[k]!);
  return into;
}

export const memoryEventsAt = (b: Bytes, s: number, e: number, onBad?: OnMalformed): MemoryEvents =>
  flatInto({ low: null, high: null, max: null, oom: null, oomKill: null, oomGroupKill: null }, MEMORY_EVENTS, b, s, e, onBad);

/** cpu.stat's keys into `cpu`; without the cpu controller it has only the usage keys. */
export function cpuStatInto(cpu: CpuStats, b: Bytes, s: number, e: number, onBad?: OnMalformed): void {
  flatInto(cpu, CPU_STAT, b, s, e, onBad);
}

/** memory.stat's keys into `m` (workingSet is the caller's, once memory.current is known too). */
export function memoryStatInto(m: MemoryStats, b: Bytes, s: number, e: number, onBad?: OnMalformed): void {
  flatInto(m, MEMORY_STAT, b, s, e, onBad);
}

/** Records in the order /v1/cgroups writes their keys (its JSON is part of the API). */
export const emptyCpu = (): CpuStats => ({
  usageUsec: null,
  userUsec: null,
  systemUsec: null,
  nrPeriods: null,
  nrThrottled: null,
  throttledUsec: null,
  nrBursts: null,
  burstUsec: null,
  max: null,
  weight: null,
});
export const emptyMemory = (): MemoryStats => ({
  current: null,
  max: null,
  high: null,
  peak: null,
  swapCurrent: null,
  swapMax: null,
  events: null,
  eventsLocal: null,
  anon: null,
  file: null,
  activeFile: null,
  inactiveFile: null,
  shmem: null,
  workingSet: null,
});

// ---- the same parsers over text: null for a missing file (null text) ----

const utf8 = (text: string) => Buffer.from(text, 'utf8');
const onText = <T>(f: (b: Bytes, s: number, e: number, onBad?: OnMalformed) => T) => (text: string | null, onBad?: OnMalformed): T | null => {
  if (text === null) return null;
  const b = utf8(text);
  return f(b, 0, b.length, onBad);
};

export const parseSingle = onText(singleAt);
export const parseCpuMax = onText(cpuMaxAt);
export const parsePsi = onText(psiAt);
export const parseMemoryEvents = onText(memoryEventsAt);

/** cpu.stat (+ cpu.max, cpu.weight) as text. */
export function parseCpu(stat: string | null, max: string | null, weight: string | null, onBad?: (file: string) => void): CpuStats {
  const cpu = emptyCpu();
  if (stat !== null) {
    const b = utf8(stat);
    cpuStatInto(cpu, b, 0, b.length, onBad && (() => onBad('cpu.stat')));
  }
  cpu.max = parseCpuMax(max, onBad && (() => onBad('cpu.max')));
  cpu.weight = parseSingle(weight, onBad && (() => onBad('cpu.weight')));
  return cpu;
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
