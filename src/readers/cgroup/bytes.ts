/**
 * Byte scanning for the cgroup v2 parsers (parse.ts): numbers, keys and lines read
 * out of one read buffer `b` between `s` and `e`, without making a string.
 *
 * Every scan stops at `e`: the rest of the buffer is another file's. Whitespace is
 * ASCII only; numbers are at most 20 digits (cgroup counters are u64).
 */

export type Bytes = Uint8Array;

const SP = 0x20;
const NL = 0x0a;
const EQ = 0x3d;
const DOT = 0x2e;
const MINUS = 0x2d;
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
export function decimalAt(b: Bytes, s: number, e: number): number {
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

export const orNull = (v: number): number | null => (v === v ? v : null); // NaN -> null

export const trimStart = (b: Bytes, s: number, e: number) => {
  while (s < e && isWs(b[s]!)) s++;
  return s;
};
export const trimEnd = (b: Bytes, s: number, e: number) => {
  while (e > s && isWs(b[e - 1]!)) e--;
  return e;
};
/** Scanned by hand, not indexOf: a search must never run past `e`. */
const lineEnd = (b: Bytes, s: number, e: number) => {
  while (s < e && b[s] !== NL) s++;
  return s;
};
/** The end of the word (run of non-whitespace) starting at `s`. */
export const wordEnd = (b: Bytes, s: number, e: number) => {
  while (s < e && !isWs(b[s]!)) s++;
  return s;
};

/** "max", the unlimited value of a limit file. */
export const isMax = (b: Bytes, s: number, e: number) => e - s === 3 && b[s] === 0x6d && b[s + 1] === 0x61 && b[s + 2] === 0x78;

/** The keys a scanner looks for, as bytes. */
export type Keys = readonly Bytes[];
export const keys = (...names: string[]): Keys => names.map((n) => Buffer.from(n, 'latin1'));

/** The index in `ks` of the key b[s, e), -1 when it is none of them. */
export function keyIndex(b: Bytes, s: number, e: number, ks: Keys): number {
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

/**
 * Where nextLine found a line: [start, end) trimmed and not blank, its first word
 * ending at `word`; the scan goes on at `next`. One object per parse, reused per line.
 */
interface Line {
  next: number;
  start: number;
  end: number;
  word: number;
}
export const lineAt = (s: number): Line => ({ next: s, start: s, end: s, word: s });

/** The next non-blank line of b[l.next, e) into `l`; false when there is none. */
export function nextLine(b: Bytes, e: number, l: Line): boolean {
  for (let ls = l.next; ls < e; ) {
    const raw = lineEnd(b, ls, e);
    const le = trimEnd(b, ls, raw);
    const start = trimStart(b, ls, le);
    ls = raw + 1;
    if (start === le) continue;
    l.next = ls;
    l.start = start;
    l.end = le;
    l.word = wordEnd(b, start, le);
    return true;
  }
  l.next = e;
  return false;
}

/** Reads the value of a `key=value` field. */
export type ValueAt = (b: Bytes, s: number, e: number) => number;

/**
 * The `key=value` fields of b[s, e) (the rest of one trimmed line): the value of each
 * of `ks`, read by `valueAt[k]`, into `out` (NaN where missing, or "key" without "=";
 * the last field of a key wins). Counted, not split: a 64 KiB line of `k=v ` must not
 * become 10,000 strings. Returns false when the line has more than `maxFields` fields.
 */
export function scanFields(b: Bytes, s: number, e: number, ks: Keys, valueAt: readonly ValueAt[], maxFields: number, out: Float64Array): boolean {
  out.fill(NaN, 0, ks.length);
  let fields = 0;
  for (let i = trimStart(b, s, e); i < e; ) {
    if (++fields > maxFields) return false;
    const we = wordEnd(b, i, e);
    let eq = i;
    while (eq < we && b[eq] !== EQ) eq++;
    const k = keyIndex(b, i, eq, ks);
    if (k >= 0) out[k] = eq === we ? NaN : valueAt[k]!(b, eq + 1, we);
    i = trimStart(b, we, e);
  }
  return true;
}
