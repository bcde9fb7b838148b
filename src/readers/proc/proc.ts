/**
 * /proc readers under the host root. PIDs are those of the host's pid namespace
 * as mounted at <host-root>/proc (the agent runs with hostPID, as the kubectl
 * debug node profile does). A pid that exits mid-read is skipped. environ is
 * never read. A command line comes back as the process set it, credentials and all:
 * it is redacted where it leaves the agent (redactCmdlines, src/redact.ts).
 */
import type { NamespaceEntry, NsType, ProcessInfo } from '../../model/process.js';
import { NS_TYPES } from '../../model/process.js';
import { readInNoLink } from '../hostfs/safe-read.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { PROC_LIMITS, procReads, readBlocking } from './limiter.js';
import type { Guard } from '../../lib/guard.js';
import { kbToBytes, parseCmdline, parseNsLink, parseProcStat, parseProcStatus } from './parse.js';

const PID_RE = /^[1-9]\d{0,9}$/;
const assertPid = (pid: number) => {
  if (!Number.isInteger(pid) || pid < 1 || pid > 0x7fffffff) throw new RangeError(`not a pid: ${pid}`);
};

/** A process row; says so when its cmdline could not be read or was cut. */
export interface ProcessRow extends ProcessInfo {
  /** why cmdline is empty although it was not read as empty (a stuck read, the request's budget) */
  cmdlineUnavailable?: string;
  /** cmdline was longer than PROC_LIMITS.cmdlineMaxBytes and is cut there */
  cmdlineTruncated?: true;
}

/**
 * What one request may spend on cmdline reads (the ones that can block, see
 * limiter.ts): a number of pids and a time; past either, rows are listed from
 * stat and status alone, each saying why its cmdline is missing.
 */
export class ProcBudget {
  pidsLeft: number;
  readonly deadline: number;
  skipped = 0;
  constructor(
    readonly maxPids: number = PROC_LIMITS.maxCmdlinePids,
    readonly ms: number = PROC_LIMITS.cmdlineBudgetMs,
    readonly guard: Guard = procReads,
    readonly maxBytes: number = PROC_LIMITS.cmdlineMaxBytes,
  ) {
    this.pidsLeft = maxPids;
    this.deadline = Date.now() + ms;
  }
  /** null: go ahead; else why not */
  take(): string | null {
    if (this.pidsLeft <= 0) return `not read: the request's budget of ${this.maxPids} cmdlines is spent`;
    if (Date.now() >= this.deadline) return `not read: the request's ${this.ms} ms budget for cmdline reads is spent`;
    this.pidsLeft--;
    return null;
  }
}

export interface ReadProcessOptions {
  /** read cmdline (default true); false for callers that only need stat/status (the main process) */
  cmdline?: boolean;
  budget?: ProcBudget;
  signal?: AbortSignal;
}

/** stat, status and cmdline of one process; null when it is gone. */
export async function readProcess(fs: HostFs, pid: number, opts: ReadProcessOptions = {}): Promise<ProcessRow | null> {
  assertPid(pid);
  const dir = await fs.dir(`/proc/${pid}`);
  const [statText, statusText] = await Promise.all([readInNoLink(fs, dir, 'stat', 16 * 1024), readInNoLink(fs, dir, 'status', 64 * 1024)]);
  const stat = parseProcStat(statText);
  if (!stat) return null;
  let cmdText: string | null = null;
  let unavailable: string | undefined;
  let truncated = false;
  if (opts.cmdline !== false) {
    // only after stat said the process is there: a listing of vanished pids spends no budget
    const budget = opts.budget ?? new ProcBudget(1);
    const no = opts.signal?.aborted ? 'not read: the request ended' : budget.take();
    if (no) {
      unavailable = no;
      budget.skipped++;
    } else {
      const r = await budget.guard.run(() => readBlocking(`${dir.realPath}/cmdline`, budget.maxBytes), { signal: opts.signal });
      if (r.ok) {
        cmdText = r.value?.text ?? null;
        truncated = r.value?.truncated ?? false;
      } else unavailable = `not read: ${r.error}`;
    }
  }
  const status = parseProcStatus(statusText);
  const threads = Number(status?.get('Threads'));
  const ppid = Number(status?.get('PPid'));
  return {
    pid: stat.pid,
    ppid: Number.isInteger(ppid) ? ppid : stat.ppid,
    comm: stat.comm,
    cmdline: parseCmdline(cmdText),
    state: stat.state,
    rssBytes: kbToBytes(status?.get('VmRSS')),
    threads: Number.isInteger(threads) ? threads : stat.numThreads,
    startTicks: stat.startTicks,
    ...(unavailable === undefined ? {} : { cmdlineUnavailable: unavailable }),
    ...(truncated ? { cmdlineTruncated: true as const } : {}),
  };
}

/** Warnings for a listing's rows without a cmdline: a few named, the rest counted. */
export function cmdlineWarnings(rows: readonly ProcessRow[], named = 10): string[] {
  const missing = rows.filter((r) => r.cmdlineUnavailable !== undefined);
  const out = missing.slice(0, named).map((r) => `pid ${r.pid}: cmdline ${r.cmdlineUnavailable}`);
  if (missing.length > named) out.push(`${missing.length - named} more pids without cmdline`);
  const cut = rows.filter((r) => r.cmdlineTruncated).length;
  if (cut > 0) out.push(`${cut} cmdlines cut at ${PROC_LIMITS.cmdlineMaxBytes} bytes`);
  return out;
}

/**
 * The container's main process among a cgroup's processes: the one whose parent
 * is outside the cgroup (the shim is in the runtime's own cgroup), earliest started.
 */
export function mainProcess(procs: readonly ProcessInfo[]): ProcessInfo | null {
  const pids = new Set(procs.map((p) => p.pid));
  const roots = procs.filter((p) => !pids.has(p.ppid));
  const pool = roots.length > 0 ? roots : procs;
  return pool.reduce<ProcessInfo | null>((best, p) => (best === null || p.startTicks < best.startTicks ? p : best), null);
}

/**
 * readlink of one ns link; null when the process is gone or the kernel refuses
 * (ptrace access mode check: without CAP_SYS_PTRACE over that process, e.g. a
 * PID 1 outside the agent's user namespace).
 */
async function nsLink(fs: HostFs, pid: number, type: NsType): Promise<string | null> {
  try {
    return await fs.readlink(`/proc/${pid}/ns/${type}`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') return null;
    throw err;
  }
}

/** Namespace inodes of a process (readlink /proc/<pid>/ns/*); null when it is gone. */
export async function readNamespaces(fs: HostFs, pid: number): Promise<Map<NsType, number> | null> {
  assertPid(pid);
  const links = await Promise.all(NS_TYPES.map((t) => nsLink(fs, pid, t)));
  const out = new Map<NsType, number>();
  NS_TYPES.forEach((t, i) => {
    const ns = parseNsLink(links[i] ?? null);
    if (ns) out.set(t, ns.inode);
  });
  return out.size > 0 ? out : null;
}

/**
 * Each namespace of `pid`, marked host (same inode as PID 1's), sandbox (same as
 * the pod sandbox process's) or private. Host wins when both match (a hostNetwork
 * pod's net namespace is the host's, and so is its sandbox's).
 */
export async function classifyNamespaces(fs: HostFs, pid: number, sandboxPid: number | null): Promise<NamespaceEntry[] | null> {
  const [mine, host, sandbox] = await Promise.all([
    readNamespaces(fs, pid),
    readNamespaces(fs, 1),
    sandboxPid === null ? Promise.resolve(null) : readNamespaces(fs, sandboxPid),
  ]);
  if (!mine) return null;
  const out: NamespaceEntry[] = [];
  for (const [type, inode] of mine) {
    const hostInode = host?.get(type) ?? null;
    const sandboxInode = sandbox?.get(type) ?? null;
    out.push({
      type,
      inode,
      sharedWith: inode === hostInode ? 'host' : inode === sandboxInode ? 'sandbox' : 'private',
      hostInode,
      sandboxInode,
    });
  }
  return out;
}

/** Numeric entries of /proc: the processes (thread-group leaders) visible. */
export async function countProcesses(fs: HostFs): Promise<number | null> {
  const entries = await fs.readdir(await fs.dir('/proc'));
  if (!entries) return null;
  let n = 0;
  for (const e of entries) if (PID_RE.test(e.name)) n++;
  return n;
}
