/**
 * What a kernel problem record names, taken by hand-written scanners (no RegExp
 * touches kernel text, which names tenants' commands): the task ("<comm>:<pid>",
 * comm may hold ':' and spaces), the seconds it states, the block device or
 * filesystem, the network namespace, and the taint letters of a report's
 * "CPU: n PID: p Comm: c Tainted: ..." line. Pure: no I/O.
 */
const isDigit = (c: number) => c >= 48 && c <= 57;

/** Digits at `i` as a number (at most 12), or null. */
function digitsAt(s: string, i: number): { n: number; end: number } | null {
  let j = i;
  while (j < s.length && j - i < 12 && isDigit(s.charCodeAt(j))) j++;
  return j > i ? { n: Number(s.slice(i, j)), end: j } : null;
}

/**
 * "<comm>:<pid>" ending at `end` (exclusive). comm may itself hold ':' and spaces
 * (a thread names itself), so the pid is the digits after the LAST ':'.
 */
function commPid(s: string, start: number, end: number): { comm: string; pid: number } | null {
  const colon = s.lastIndexOf(':', end - 1);
  if (colon < start) return null;
  const d = digitsAt(s, colon + 1);
  if (!d || d.end !== end) return null;
  return { comm: s.slice(start, colon), pid: d.n };
}

/** What a record names (null: it does not). */
export interface Named {
  /** the task the kernel names (thread id, in the host's pid namespace) */
  pid: number | null;
  comm: string | null;
  /** block device or filesystem the record names */
  device: string | null;
  /** "nf_conntrack: table full in netns <n>" */
  netns: number | null;
  /** seconds the kernel states (blocked for more than N seconds, stuck for Ns) */
  seconds: number | null;
}

export const NOTHING_NAMED: Named = { pid: null, comm: null, device: null, netns: null, seconds: null };

/** "INFO: task kworker/u4:2:123 blocked for more than 120 seconds." */
export function hungTaskNamed(t: string): Named {
  const a = t.indexOf('INFO: task ');
  const b = t.indexOf(' blocked for more than ', a);
  if (a < 0 || b < 0) return NOTHING_NAMED;
  const cp = commPid(t, a + 'INFO: task '.length, b);
  const secs = digitsAt(t, b + ' blocked for more than '.length);
  return { ...NOTHING_NAMED, pid: cp?.pid ?? null, comm: cp?.comm ?? null, seconds: secs?.n ?? null };
}

/** "watchdog: BUG: soft lockup - CPU#1 stuck for 23s! [stress:4242]" */
export function softLockupNamed(t: string): Named {
  const a = t.indexOf(' stuck for ');
  if (a < 0) return NOTHING_NAMED;
  const secs = digitsAt(t, a + ' stuck for '.length);
  const open = t.indexOf('! [', a);
  const close = t.lastIndexOf(']');
  const cp = open >= 0 && close > open ? commPid(t, open + 3, close) : null;
  return { ...NOTHING_NAMED, pid: cp?.pid ?? null, comm: cp?.comm ?? null, seconds: secs?.n ?? null };
}

/** the name between `open` and the next ')' ("(device sda1)", "XFS (dm-0)") */
function between(t: string, open: string, close: string): string | null {
  const a = t.indexOf(open);
  if (a < 0) return null;
  const b = t.indexOf(close, a + open.length);
  if (b < 0 || b - a - open.length > 64) return null;
  const v = t.slice(a + open.length, b);
  return v === '' ? null : v;
}

export function deviceNamed(t: string): Named {
  const d =
    between(t, 'EXT4-fs error (device ', ')') ??
    between(t, 'EXT4-fs (', ')') ??
    between(t, 'XFS (', ')') ??
    between(t, ', dev ', ',') ??
    between(t, 'Buffer I/O error on dev ', ',') ??
    journalDevice(between(t, 'Aborting journal on device ', '.')) ??
    between(t, '-fs (', ')');
  return { ...NOTHING_NAMED, device: d };
}

/** jbd2 names a journal "<bdev>-<inode>" ("vdb-8"): the device is the part before */
function journalDevice(name: string | null): string | null {
  if (name === null) return null;
  const dash = name.lastIndexOf('-');
  return dash > 0 && digitsAt(name, dash + 1)?.end === name.length ? name.slice(0, dash) : name;
}

export function netnsNamed(t: string): Named {
  const a = t.indexOf('table full in netns ');
  const d = a >= 0 ? digitsAt(t, a + 'table full in netns '.length) : null;
  return { ...NOTHING_NAMED, netns: d?.n ?? null };
}

/**
 * "CPU: 1 PID: 2345 Comm: app Tainted: G      D     6.1.0-57-amd64 #1 Debian ..."
 * (6.10+ adds "UID: 0 " before PID). comm is printed %.20s and may hold spaces, so
 * it ends where " Not tainted" or " Tainted: " begins.
 */
export function parseCpuLine(t: string): { pid: number; comm: string; taint: string | null } | null {
  if (!t.startsWith('CPU: ')) return null;
  const p = t.indexOf(' PID: ');
  if (p < 0 || p > 40) return null;
  const pid = digitsAt(t, p + ' PID: '.length);
  if (!pid || !t.startsWith(' Comm: ', pid.end)) return null;
  const from = pid.end + ' Comm: '.length;
  const limit = Math.min(t.length, from + 24);
  const nt = t.indexOf(' Not tainted', from);
  const tt = t.indexOf(' Tainted: ', from);
  const end = [nt, tt].filter((i) => i >= 0 && i <= limit).sort((x, y) => x - y)[0];
  if (end === undefined) return { pid: pid.n, comm: t.slice(from, from + 20), taint: null };
  return { pid: pid.n, comm: t.slice(from, end), taint: end === nt ? '' : taintLetters(t, end + ' Tainted: '.length) };
}

/** The set taint letters after "Tainted: " ("G      D W" → "DW"; G is "no proprietary module", not a taint). */
function taintLetters(t: string, from: number): string {
  let out = '';
  for (let i = from; i < t.length && i - from < 40; i++) {
    const c = t[i]!;
    if (c === ' ') continue;
    if (c < 'A' || c > 'Z') break;
    if (c !== 'G' && !out.includes(c)) out += c;
  }
  return out;
}
