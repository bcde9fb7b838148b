/**
 * Pure parsers for cgroup v2 interface files (Documentation/admin-guide/cgroup-v2.rst,
 * "Interface Files" / "Format"). No I/O.
 *
 * Written once, over bytes: the reader (cgroups.ts) hands them the one read buffer
 * as it is (`b`, from `s` to `e`), so a scrape of 1,500 cgroups makes no string per
 * file, per line or per key; the string entry points below (parsePsi(text), ...)
 * are the same code over the text's UTF-8 bytes. Only the keys a record holds are
 * kept; every other line is still checked, so a malformed one is told (OnMalformed)
 * whichever key it carries.
 *
 * Files are hostile input (a tenant with write access to its cgroup, or a broken
 * kernel interface, can put anything there): whitespace is ASCII only, numbers are
 * at most 20 digits (cgroup counters are u64), a line that does not parse is
 * skipped and the rest kept.
 */
import type { CpuMax, CpuStats, IoDeviceStat, Limit, MemoryEvents, MemoryStats, Psi, PsiLine } from '../../model/cgroup.js';

/**
 * Told once per file that a line or value of it was malformed and skipped;
 * the parser keeps every well-formed line.
 */
export type OnMalformed = () => void;

type Bytes = Uint8Array;

const SP = 0x20;
const NL = 0x0a;
const EQ = 0x3d;
const DOT = 0x2e;
const MINUS = 0x2d;
const COLON = 0x3a;
// space, \t \n \v \f \r
const isWs = (c: number) => c === SP || (c >= 0x09 && c <= 0x0d);

/** Below 16 digits the running sum is exact; above, Number() of the text rounds as JSON.parse would. */
const EXACT_DIGITS = 15;

/**
 * An integer `-?\d{1,20}` in b[s, e), NaN when it is not one (or beyond ±2^64).
 * NaN rather than null: the scanners keep their values in a Float64Array.
 */
export function intAt(b: Bytes, s: number, e: number): number {
  const neg = s < e && b[s] === MINUS;
  const d0 = neg ? s + 1 : s;
  const digits = e - d0;
  if (digits < 1 || digits > 20) return NaN;
  let n = 0;
  for (let i = d0; i < e; i++) {
    const d = b[i]! - 48;
    if (d < 0 || d > 9) return NaN;
    n = n * 10 + d;
  }
  if (digits > EXACT_DIGITS) {
    n = Number(Buffer.from(b.buffer, b.byteOffset + d0, digits).toString('latin1'));
    if (n > 2 ** 64) return NaN;
  }
  return neg ? -n : n;
}

const POW10 = [1, 10, 100, 1000, 10000];

/**
 * A PSI average, `\d{1,10}(\.\d{1,4})?` (the kernel prints %lu.%02lu), NaN otherwise.
 * Integer over a power of ten: one correctly rounded division, the same double Number(text) gives.
 */
function decimalAt(b: Bytes, s: number, e: number): number {
  let n = 0;
  let i = s;
  for (; i < e && b[i] !== DOT; i++) {
    const d = b[i]! - 48;
    if (d < 0 || d > 9) return NaN;
    n = n * 10 + d;
  }
  const intDigits = i - s;
  if (intDigits < 1 || intDigits > 10) return NaN;
  if (i === e) return n;
  const frac = e - i - 1;
  if (frac < 1 || frac > 4) return NaN;
  for (i++; i < e; i++) {
    const d = b[i]! - 48;
    if (d < 0 || d > 9) return NaN;
    n = n * 10 + d;
  }
  return n / POW10[frac]!;
}

const orNull = (v: number): number | null => (v === v ? v : null); // NaN -> null

const trimStart = (b: Bytes, s: number, e: number) => {
  while (s < e && isWs(b[s]!)) s++;
  return s;
};
const trimEnd = (b: Bytes, s: number, e: number) => {
  while (e > s && isWs(b[e - 1]!)) e--;
  return e;
};
/** Scanned by hand, not indexOf: a search must never run past `e` (the rest of the buffer is another file's). */
const lineEnd = (b: Bytes, s: number, e: number) => {
  while (s < e && b[s] !== NL) s++;
  return s;
};

/** The keys a scanner looks for, as bytes. */
export type Keys = readonly Bytes[];
export const keys = (...names: string[]): Keys => names.map((n) => Buffer.from(n, 'latin1'));

function keyIndex(b: Bytes, s: number, e: number, ks: Keys): number {
  const len = e - s;
  for (let k = 0; k < ks.length; k++) {
    const key = ks[k]!;
    if (key.length !== len || key[0] !== b[s]) continue;
    let i = 1;
    while (i < len && key[i] === b[s + i]) i++;
    if (i === len) return k;
  }
  return -1;
}

/**
 * Flat keyed, "key value" per line (memory.events, memory.stat, cpu.stat): the value
 * of each of `ks` into `out` (NaN where missing; the last line of a key wins). Every
 * line is checked, kept or not. Returns true when a line was malformed.
 */
export function scanFlatKeyed(b: Bytes, s: number, e: number, ks: Keys, out: Float64Array): boolean {
  out.fill(NaN, 0, ks.length);
  let bad = false;
  // one pass a line: the key up to the first space, the value to the newline
  for (let i = s; i < e; i++) {
    const ls = i;
    while (i < e && b[i] !== SP && b[i] !== NL) i++;
    const ke = i;
    if (i === e || b[i] === NL) {
      if (ke > ls) bad = true; // a line without a value; an empty line is nothing
      continue;
    }
    i++;
    while (i < e && b[i] !== NL && isWs(b[i]!)) i++; // never past the line
    const vs = i;
    while (i < e && b[i] !== NL) i++;
    const v = ke > ls ? intAt(b, vs, trimEnd(b, vs, i)) : NaN;
    if (v !== v) bad = true;
    else {
      const k = keyIndex(b, ls, ke, ks);
      if (k >= 0) out[k] = v;
    }
  }
  return bad;
}

/** A single number (memory.current, pids.current, cpu.weight); null when not a number. */
export function singleAt(b: Bytes, s: number, e: number, onBad?: OnMalformed): number | null {
  const v = intAt(b, trimStart(b, s, e), trimEnd(b, s, e));
  if (v !== v) onBad?.();
  return orNull(v);
}

const isMax = (b: Bytes, s: number, e: number) => e - s === 3 && b[s] === 0x6d && b[s + 1] === 0x61 && b[s + 2] === 0x78;

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
  let qe = qs;
  while (qe < end && !isWs(b[qe]!)) qe++;
  const ps = trimStart(b, qe, end);
  let pe = ps;
  while (pe < end && !isWs(b[pe]!)) pe++;
  const periodUsec = pe === end && ps > qe ? intAt(b, ps, pe) : NaN;
  const quotaUsec: Limit = isMax(b, qs, qe) ? 'max' : intAt(b, qs, qe);
  if (!(periodUsec > 0) || quotaUsec !== quotaUsec) {
    onBad?.();
    return null;
  }
  return { quotaUsec, periodUsec, quotaCores: quotaUsec === 'max' ? 'max' : round(quotaUsec / periodUsec, 4) };
}

const PSI_KEYS = keys('avg10', 'avg60', 'avg300', 'total');
/** A PSI line has 4 fields; a kernel with more would have a few (a long run of them is junk). */
const PSI_MAX_FIELDS = 8;
const psiVals = new Float64Array(PSI_KEYS.length);

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
  for (let ls = s; ls < e; ) {
    const raw = lineEnd(b, ls, e);
    const le = trimEnd(b, ls, raw);
    let i = trimStart(b, ls, le);
    ls = raw + 1;
    if (i === le) continue;
    let we = i;
    while (we < le && !isWs(b[we]!)) we++;
    const kind = we - i === 4 ? (b[i] === 0x73 && b[i + 1] === 0x6f && b[i + 2] === 0x6d && b[i + 3] === 0x65 ? 1 : b[i] === 0x66 && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c ? 2 : 0) : 0;
    psiVals.fill(NaN);
    let fields = 0;
    for (i = trimStart(b, we, le); i < le && kind !== 0; i = trimStart(b, we, le)) {
      if (++fields > PSI_MAX_FIELDS) break;
      we = i;
      while (we < le && !isWs(b[we]!)) we++;
      let eq = i;
      while (eq < we && b[eq] !== EQ) eq++;
      const k = keyIndex(b, i, eq, PSI_KEYS);
      // "avg10" without a value counts as a bad one, as a later "avg10=1" counts as the value
      if (k >= 0) psiVals[k] = eq === we ? NaN : k === 3 ? intAt(b, eq + 1, we) : decimalAt(b, eq + 1, we);
    }
    const avg10 = psiVals[0]!;
    const avg60 = psiVals[1]!;
    const avg300 = psiVals[2]!;
    const total = psiVals[3]!;
    if (kind === 0 || fields > PSI_MAX_FIELDS || avg10 !== avg10 || avg60 !== avg60 || avg300 !== avg300 || !(total >= 0)) {
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
const ioVals = new Float64Array(IO_KEYS.length);

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
  for (let ls = s; ls < e; ) {
    const raw = lineEnd(b, ls, e);
    const le = trimEnd(b, ls, raw);
    const ds = trimStart(b, ls, le);
    ls = raw + 1;
    if (ds === le) continue;
    let de = ds;
    while (de < le && !isWs(b[de]!)) de++;
    ioVals.fill(NaN);
    let fields = 0;
    for (let i = trimStart(b, de, le); i < le; ) {
      // counted, not split: a 64 KiB line of `k=v ` must not become 10,000 strings
      if (++fields > IO_MAX_FIELDS) break;
      let we = i;
      while (we < le && !isWs(b[we]!)) we++;
      let eq = i;
      while (eq < we && b[eq] !== EQ) eq++;
      const k = keyIndex(b, i, eq, IO_KEYS);
      if (k >= 0) ioVals[k] = eq === we ? NaN : intAt(b, eq + 1, we);
      i = trimStart(b, we, le);
    }
    if (fields > IO_MAX_FIELDS || !isDevice(b, ds, de)) {
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

export const MEMORY_EVENTS_KEYS = keys('low', 'high', 'max', 'oom', 'oom_kill', 'oom_group_kill');
/** The memory.stat keys a record holds (of ~40): anon, file, active_file, inactive_file, shmem. */
export const MEMORY_STAT_KEYS = keys('anon', 'file', 'active_file', 'inactive_file', 'shmem');
export const CPU_STAT_KEYS = keys('usage_usec', 'user_usec', 'system_usec', 'nr_periods', 'nr_throttled', 'throttled_usec', 'nr_bursts', 'burst_usec');
const flatVals = new Float64Array(8);

export function memoryEventsAt(b: Bytes, s: number, e: number, onBad?: OnMalformed): MemoryEvents {
  const v = flatVals;
  if (scanFlatKeyed(b, s, e, MEMORY_EVENTS_KEYS, v)) onBad?.();
  return { low: orNull(v[0]!), high: orNull(v[1]!), max: orNull(v[2]!), oom: orNull(v[3]!), oomKill: orNull(v[4]!), oomGroupKill: orNull(v[5]!) };
}

/** cpu.stat's keys into `cpu`; without the cpu controller it has only the usage keys. */
export function cpuStatInto(cpu: CpuStats, b: Bytes, s: number, e: number, onBad?: OnMalformed): void {
  const v = flatVals;
  if (scanFlatKeyed(b, s, e, CPU_STAT_KEYS, v)) onBad?.();
  cpu.usageUsec = orNull(v[0]!);
  cpu.userUsec = orNull(v[1]!);
  cpu.systemUsec = orNull(v[2]!);
  cpu.nrPeriods = orNull(v[3]!);
  cpu.nrThrottled = orNull(v[4]!);
  cpu.throttledUsec = orNull(v[5]!);
  cpu.nrBursts = orNull(v[6]!);
  cpu.burstUsec = orNull(v[7]!);
}

/** memory.stat's keys into `m` (workingSet is the caller's, once memory.current is known too). */
export function memoryStatInto(m: MemoryStats, b: Bytes, s: number, e: number, onBad?: OnMalformed): void {
  const v = flatVals;
  if (scanFlatKeyed(b, s, e, MEMORY_STAT_KEYS, v)) onBad?.();
  m.anon = orNull(v[0]!);
  m.file = orNull(v[1]!);
  m.activeFile = orNull(v[2]!);
  m.inactiveFile = orNull(v[3]!);
  m.shmem = orNull(v[4]!);
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
export const parseLimit = onText(limitAt);
export const parseCpuMax = onText(cpuMaxAt);
export const parsePsi = onText(psiAt);
export const parseIoStat = onText(ioStatAt);
export const parseMemoryEvents = onText(memoryEventsAt);

/** Flat keyed text: the values of `names` found (a Map, in the order of `names`); null for a missing file. */
export function parseFlatKeyed(text: string | null, names: readonly string[], onBad?: OnMalformed): Map<string, number> | null {
  if (text === null) return null;
  const b = utf8(text);
  const v = new Float64Array(names.length);
  if (scanFlatKeyed(b, 0, b.length, keys(...names), v)) onBad?.();
  return new Map(names.flatMap((n, i) => (v[i] === v[i] ? [[n, v[i]!] as const] : [])));
}

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

export interface MemoryFiles {
  current: string | null;
  max: string | null;
  high: string | null;
  peak: string | null;
  swapCurrent: string | null;
  swapMax: string | null;
  events: string | null;
  eventsLocal: string | null;
  stat: string | null;
}

/** The memory files as text. */
export function parseMemory(f: MemoryFiles, onBad?: (file: string) => void): MemoryStats {
  const bad = (file: string) => onBad && (() => onBad(file));
  const m = emptyMemory();
  m.current = parseSingle(f.current, bad('memory.current'));
  m.max = parseLimit(f.max, bad('memory.max'));
  m.high = parseLimit(f.high, bad('memory.high'));
  m.peak = parseSingle(f.peak, bad('memory.peak'));
  m.swapCurrent = parseSingle(f.swapCurrent, bad('memory.swap.current'));
  m.swapMax = parseLimit(f.swapMax, bad('memory.swap.max'));
  m.events = parseMemoryEvents(f.events, bad('memory.events'));
  m.eventsLocal = parseMemoryEvents(f.eventsLocal, bad('memory.events.local'));
  if (f.stat !== null) {
    const b = utf8(f.stat);
    memoryStatInto(m, b, 0, b.length, bad('memory.stat'));
  }
  m.workingSet = workingSet(m.current, m.inactiveFile);
  return m;
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
