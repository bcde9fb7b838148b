/**
 * Processes and namespaces of a container, found through its cgroup (works
 * with the runtime down). PIDs come from cgroup.procs, read in the agent's pid
 * namespace: nodetruth must run with the host's (hostPID, as the kubectl debug
 * node profile gives it) for them to match <host-root>/proc.
 */
import type { NamespaceEntry } from '../model/process.js';
import { SourceError } from '../readers/errors.js';
import type { FoundCgroup } from '../readers/cgroup/cgroups.js';
import type { RuntimeIndex } from './runtime-index.js';
import type { HostFs } from '../readers/hostfs/hostfs.js';
import { mapLimit } from '../lib/concurrency.js';
import { classifyNamespaces, cmdlineWarnings, mainProcess, ProcBudget, readProcess, type ProcessRow, type ReadProcessOptions } from '../readers/proc/proc.js';

const errText = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;
/** pids a listing names one by one in `warnings` before it only counts them */
const NAMED_PIDS = 10;
/** cgroup.procs holds one decimal pid per line; 1 MiB is ~140,000 pids, past pid_max defaults */
const PROCS_MAX_BYTES = 1024 * 1024;
const MAX_PID = 0x7fffffff;

type Procs = { ok: true; pids: number[]; bad: number } | { ok: false; gone: true } | { ok: false; gone: false; reason: string };

/**
 * cgroup.procs of a container cgroup. Read with readIn, not readInNoLink: a link in
 * place of the file (ELOOP) is a cgroup that cannot be read, not one that vanished.
 * A directory in its place (EISDIR), EACCES under an LSM, EIO: the reason, not a throw.
 * Lines that are no pid (0, past 2^31, garbage) are counted, not fatal.
 */
export async function readPids(fs: HostFs, c: FoundCgroup): Promise<Procs> {
  let text: string | null;
  try {
    text = await fs.readIn(c.dir, 'cgroup.procs', PROCS_MAX_BYTES);
  } catch (err) {
    return { ok: false, gone: false, reason: `${c.path}/cgroup.procs: ${errText(err)}` };
  }
  if (text === null) return { ok: false, gone: true };
  const pids: number[] = [];
  let bad = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const n = /^[1-9]\d{0,9}$/.test(line) ? Number(line) : NaN;
    if (n >= 1 && n <= MAX_PID) pids.push(n);
    else bad++;
  }
  return { ok: true, pids, bad };
}

/**
 * Processes of many pids, bounded concurrency, in pid order. A pid that exits while it
 * is read, or whose /proc entry cannot be read (a directory for stat, a link loop), is
 * skipped and named in `warnings` (the first few by pid, the rest counted); the others stand.
 */
export async function readPidsSkipping(fs: HostFs, pids: readonly number[], opts: ReadProcessOptions, warnings: string[]): Promise<ProcessRow[]> {
  const sorted = [...new Set(pids)].sort((a, b) => a - b);
  const budget = opts.budget ?? new ProcBudget();
  const gone: number[] = [];
  const failed: string[] = [];
  const rows = await mapLimit(sorted, 16, async (pid) => {
    try {
      const row = await readProcess(fs, pid, { ...opts, budget });
      if (row === null) gone.push(pid);
      return row;
    } catch (err) {
      failed.push(`pid ${pid}: /proc/${pid} unreadable (${errText(err)}), skipped`);
      return null;
    }
  });
  failed.sort((a, b) => Number(a.split(' ')[1]) - Number(b.split(' ')[1]));
  warnings.push(...failed.slice(0, NAMED_PIDS));
  if (failed.length > NAMED_PIDS) warnings.push(`${failed.length - NAMED_PIDS} more pids unreadable, skipped`);
  gone.sort((a, b) => a - b);
  if (gone.length > 0) {
    const named = gone.slice(0, NAMED_PIDS).join(', ');
    warnings.push(`pid${gone.length > 1 ? 's' : ''} ${named}${gone.length > NAMED_PIDS ? ` and ${gone.length - NAMED_PIDS} more` : ''}: exited while the cgroup was read, skipped`);
  }
  return rows.filter((p): p is ProcessRow => p !== null);
}

/** The pids of THE container asked about: a cgroup gone is not_found, one that cannot be read says why (source_unreadable). */
async function pidsOfTarget(fs: HostFs, c: FoundCgroup, warnings: string[]): Promise<number[]> {
  const r = await readPids(fs, c);
  if (!r.ok && r.gone) throw new SourceError('not_found', `the cgroup of container ${c.containerId} vanished (the container exited)`);
  if (!r.ok) throw new SourceError('source_unreadable', `cannot read the processes of container ${c.containerId}: ${r.reason}`);
  if (r.bad > 0) warnings.push(`${c.path}/cgroup.procs: ${r.bad} line(s) that are no pid, skipped`);
  return r.pids;
}

/** The processes of a container cgroup, cmdlines within the request's budget (see limiter.ts). */
export async function containerProcesses(fs: HostFs, c: FoundCgroup, signal?: AbortSignal): Promise<{ items: ProcessRow[]; warnings: string[] }> {
  const warnings: string[] = [];
  const pids = await pidsOfTarget(fs, c, warnings);
  const items = await readPidsSkipping(fs, pids, { budget: new ProcBudget(), ...(signal ? { signal } : {}) }, warnings);
  return { items, warnings: [...warnings, ...cmdlineWarnings(items)] };
}

type SandboxSource = 'runtime' | 'earliest-process' | 'self';

interface SandboxRef {
  containerId: string;
  pid: number;
  /**
   * runtime: the pod's sandbox id from ListContainers/ListPodSandbox, its cgroup's main process;
   * earliest-process: runtime not answering: the container cgroup in the same pod whose main
   *   process started first (the sandbox is created before any container and outlives restarts);
   * self: the container asked about is the sandbox.
   */
  source: SandboxSource;
}

interface ContainerNamespaces {
  containerId: string;
  podUid: string;
  pid: number;
  sandbox: SandboxRef | null;
  items: NamespaceEntry[];
  /** what was skipped: a sibling cgroup or a pid that could not be read */
  warnings: string[];
}

/** The main process of a cgroup's pids; null when it has none left. stat and status say which: no cmdline needed (nor its risk). */
async function mainOf(fs: HostFs, pids: readonly number[], warnings: string[]): Promise<{ pid: number; startTicks: number } | null> {
  if (pids.length === 0) return null;
  const main = mainProcess(await readPidsSkipping(fs, pids, { cmdline: false }, warnings));
  return main && { pid: main.pid, startTicks: main.startTicks };
}

/** A sibling's main process: one whose cgroup cannot be read is left out with a warning, never fails the answer. */
async function mainPid(fs: HostFs, c: FoundCgroup, warnings: string[]): Promise<{ pid: number; startTicks: number } | null> {
  const r = await readPids(fs, c);
  if (!r.ok) {
    if (!r.gone) warnings.push(`cgroup ${c.path}: cannot read its processes (${r.reason}), skipped`);
    return null;
  }
  return mainOf(fs, r.pids, warnings);
}

async function findSandbox(
  fs: HostFs,
  all: readonly FoundCgroup[],
  target: FoundCgroup,
  index: RuntimeIndex | null,
  warnings: string[] = [],
): Promise<SandboxRef | null> {
  const siblings = all.filter((c) => c.kind === 'container' && c.podUid === target.podUid && c.driver === target.driver);
  if (index) {
    const sandboxId = index.sandboxes.has(target.containerId!) ? target.containerId! : index.containers.get(target.containerId!)?.podId;
    const sb = sandboxId ? siblings.find((c) => c.containerId === sandboxId) : undefined;
    if (sb) {
      const m = await mainPid(fs, sb, warnings);
      if (m) return { containerId: sb.containerId!, pid: m.pid, source: sb === target ? 'self' : 'runtime' };
    }
  }
  const mains = await Promise.all(siblings.map(async (c) => ({ c, m: await mainPid(fs, c, warnings) })));
  const first = mains
    .filter((x): x is { c: FoundCgroup; m: { pid: number; startTicks: number } } => x.m !== null)
    .sort((a, b) => a.m.startTicks - b.m.startTicks)[0];
  if (!first) return null;
  return { containerId: first.c.containerId!, pid: first.m.pid, source: first.c === target ? 'self' : 'earliest-process' };
}

export async function containerNamespaces(fs: HostFs, all: readonly FoundCgroup[], target: FoundCgroup, index: RuntimeIndex | null): Promise<ContainerNamespaces> {
  const warnings: string[] = [];
  const main = await mainOf(fs, await pidsOfTarget(fs, target, warnings), warnings);
  if (!main) throw new SourceError('not_found', `container ${target.containerId} has no process in its cgroup (or it exited)`);
  const sandbox = await findSandbox(fs, all, target, index, warnings);
  let items: NamespaceEntry[] | null;
  try {
    items = await classifyNamespaces(fs, main.pid, sandbox && sandbox.pid !== main.pid ? sandbox.pid : null);
  } catch (err) {
    // /proc/<pid>/ns of the main process, PID 1 or the sandbox is no directory of links (a loop, a file)
    throw new SourceError('source_unreadable', `cannot read the namespaces of process ${main.pid} of container ${target.containerId}: ${errText(err)}`);
  }
  if (!items) throw new SourceError('not_found', `process ${main.pid} of container ${target.containerId} exited`);
  if (sandbox && sandbox.pid === main.pid) {
    // The sandbox itself: what is not the host's is the sandbox's by definition.
    for (const ns of items) {
      ns.sandboxInode = ns.inode;
      if (ns.sharedWith === 'private') ns.sharedWith = 'sandbox';
    }
  }
  // the target is among its pod's siblings: what it skipped is said once
  return { containerId: target.containerId!, podUid: target.podUid, pid: main.pid, sandbox, items, warnings: [...new Set(warnings)] };
}
