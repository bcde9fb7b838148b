/**
 * Pure parsers for /proc files (proc(5)). No I/O; null where the text is not
 * what the kernel writes.
 */
import type { NsType } from '../../model/process.js';

interface ProcStat {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  utimeTicks: number;
  stimeTicks: number;
  numThreads: number;
  startTicks: number;
  rssPages: number;
}

/**
 * /proc/<pid>/stat: "pid (comm) state ppid ...". comm may itself contain spaces
 * and parentheses, so it runs from the first '(' to the LAST ')'.
 */
export function parseProcStat(text: string | null): ProcStat | null {
  if (text === null) return null;
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  const f = text.slice(close + 1).trim().split(' ');
  // f[0] is field 3 (state); field n is f[n - 3]
  const n = (field: number) => Number(f[field - 3]);
  if (!Number.isInteger(pid) || f.length < 22) return null;
  return {
    pid,
    comm: text.slice(open + 1, close),
    state: f[0]!,
    ppid: n(4),
    utimeTicks: n(14),
    stimeTicks: n(15),
    numThreads: n(20),
    startTicks: n(22),
    rssPages: n(24),
  };
}

/** /proc/<pid>/status: "Key:\tvalue" lines. */
export function parseProcStatus(text: string | null): Map<string, string> | null {
  if (text === null) return null;
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) out.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  return out;
}

/** "4 kB" → 4096; the kernel only ever writes kB in status and meminfo. */
export function kbToBytes(v: string | undefined): number | null {
  const m = /^(\d+)\s*kB$/.exec(v ?? '');
  return m ? Number(m[1]) * 1024 : null;
}

/** /proc/<pid>/cmdline: NUL-separated argv with a trailing NUL. */
export function parseCmdline(text: string | null): string[] {
  if (!text) return [];
  const parts = text.split('\0');
  if (parts[parts.length - 1] === '') parts.pop();
  return parts;
}

interface LoadAvg {
  load1: number;
  load5: number;
  load15: number;
  /** currently runnable scheduling entities */
  runnable: number;
  /** all scheduling entities (threads) on the system */
  threads: number;
  lastPid: number;
}

/** /proc/loadavg: "0.52 0.58 0.59 2/1206 123456" */
export function parseLoadavg(text: string | null): LoadAvg | null {
  if (text === null) return null;
  const m = /^(\S+) (\S+) (\S+) (\d+)\/(\d+) (\d+)/.exec(text.trim());
  if (!m) return null;
  return {
    load1: Number(m[1]),
    load5: Number(m[2]),
    load15: Number(m[3]),
    runnable: Number(m[4]),
    threads: Number(m[5]),
    lastPid: Number(m[6]),
  };
}

/** /proc/meminfo: "MemTotal:       16318860 kB" → bytes (unitless lines such as HugePages_Total kept as numbers). */
export function parseMeminfo(text: string | null): Map<string, number> | null {
  if (text === null) return null;
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([^:]+):\s+(\d+)(?: (kB))?$/.exec(line.trim());
    if (m) out.set(m[1]!, Number(m[2]) * (m[3] ? 1024 : 1));
  }
  return out;
}

/** /proc/uptime: "350735.47 234388.90" */
export function parseUptime(text: string | null): { uptimeSeconds: number; idleSeconds: number } | null {
  if (text === null) return null;
  const [u, i] = text.trim().split(/\s+/).map(Number);
  if (u === undefined || !Number.isFinite(u)) return null;
  return { uptimeSeconds: u, idleSeconds: i !== undefined && Number.isFinite(i) ? i : 0 };
}

/** readlink of /proc/<pid>/ns/<type>: "net:[4026531840]" */
export function parseNsLink(link: string | null): { type: NsType; inode: number } | null {
  const m = /^([a-z_]+):\[(\d+)\]$/.exec(link ?? '');
  return m ? { type: m[1] as NsType, inode: Number(m[2]) } : null;
}
