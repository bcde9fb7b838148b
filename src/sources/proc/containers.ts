/**
 * Processes and namespaces of a container, found through its cgroup (works
 * with the runtime down). PIDs come from cgroup.procs, read in the agent's pid
 * namespace: nodetruth must run with the host's (hostPID, as the kubectl debug
 * node profile gives it) for them to match <host-root>/proc.
 */
import type { NamespaceEntry } from '../../model/process.js';
import { notFound } from '../../errors.js';
import { type FoundCgroup, readProcs } from '../cgroup/cgroups.js';
import type { RuntimeIndex } from '../cgroup/names.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { classifyNamespaces, cmdlineWarnings, mainProcess, ProcBudget, readProcesses, type ProcessRow } from './proc.js';

/** The processes of a container cgroup, cmdlines within the request's budget (see limiter.ts). */
export async function containerProcesses(fs: HostFs, c: FoundCgroup, signal?: AbortSignal): Promise<{ items: ProcessRow[]; warnings: string[] }> {
  const pids = await readProcs(fs, c.dir);
  if (pids === null) throw notFound(`the cgroup of container ${c.containerId} vanished (the container exited)`);
  const items = await readProcesses(fs, pids, 16, { budget: new ProcBudget(), ...(signal ? { signal } : {}) });
  return { items, warnings: cmdlineWarnings(items) };
}

export type SandboxSource = 'runtime' | 'earliest-process' | 'self';

export interface SandboxRef {
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

export interface ContainerNamespaces {
  containerId: string;
  podUid: string;
  pid: number;
  sandbox: SandboxRef | null;
  items: NamespaceEntry[];
}

async function mainPid(fs: HostFs, c: FoundCgroup): Promise<{ pid: number; startTicks: number } | null> {
  const pids = await readProcs(fs, c.dir);
  if (!pids || pids.length === 0) return null;
  // stat and status say which is the main process; no cmdline needed (nor its risk)
  const main = mainProcess(await readProcesses(fs, pids, 16, { cmdline: false }));
  return main && { pid: main.pid, startTicks: main.startTicks };
}

export async function findSandbox(fs: HostFs, all: readonly FoundCgroup[], target: FoundCgroup, index: RuntimeIndex | null): Promise<SandboxRef | null> {
  const siblings = all.filter((c) => c.kind === 'container' && c.podUid === target.podUid && c.driver === target.driver);
  if (index) {
    const sandboxId = index.sandboxes.has(target.containerId!) ? target.containerId! : index.containers.get(target.containerId!)?.podId;
    const sb = sandboxId ? siblings.find((c) => c.containerId === sandboxId) : undefined;
    if (sb) {
      const m = await mainPid(fs, sb);
      if (m) return { containerId: sb.containerId!, pid: m.pid, source: sb === target ? 'self' : 'runtime' };
    }
  }
  const mains = await Promise.all(siblings.map(async (c) => ({ c, m: await mainPid(fs, c) })));
  const first = mains
    .filter((x): x is { c: FoundCgroup; m: { pid: number; startTicks: number } } => x.m !== null)
    .sort((a, b) => a.m.startTicks - b.m.startTicks)[0];
  if (!first) return null;
  return { containerId: first.c.containerId!, pid: first.m.pid, source: first.c === target ? 'self' : 'earliest-process' };
}

export async function containerNamespaces(fs: HostFs, all: readonly FoundCgroup[], target: FoundCgroup, index: RuntimeIndex | null): Promise<ContainerNamespaces> {
  const main = await mainPid(fs, target);
  if (!main) throw notFound(`container ${target.containerId} has no process in its cgroup (or it exited)`);
  const sandbox = await findSandbox(fs, all, target, index);
  const items = await classifyNamespaces(fs, main.pid, sandbox && sandbox.pid !== main.pid ? sandbox.pid : null);
  if (!items) throw notFound(`process ${main.pid} of container ${target.containerId} exited`);
  if (sandbox && sandbox.pid === main.pid) {
    // The sandbox itself: what is not the host's is the sandbox's by definition.
    for (const ns of items) {
      ns.sandboxInode = ns.inode;
      if (ns.sharedWith === 'private') ns.sharedWith = 'sandbox';
    }
  }
  return { containerId: target.containerId!, podUid: target.podUid, pid: main.pid, sandbox, items };
}
