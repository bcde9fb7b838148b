/** The triage snapshot's reads, from the agent's sources (no I/O of its own but where the agent itself runs). */
import { readFileSync } from 'node:fs';
import { CGROUP_MOUNT } from '../readers/cgroup/cgroups.js';
import { cniDirsFromRuntimeInfo, readCniState } from '../readers/cni/cni.js';
import { journalQuery } from '../readers/journal/query.js';
import { noCriSocket } from '../readers/cri/errors.js';
import { requireRuntime, type Sources } from '../sources.js';
import { KernelProblemsSource } from '../view/kernel-problems.js';
import { nodeFacts } from '../readers/node/facts.js';
import { nodeHealth } from '../view/node-health.js';
import { deadlines } from '../deadlines.js';
import { THRESHOLDS } from '../rules/thresholds.js';
import type { TriageSources } from './snapshot.js';

/**
 * The agent's own cgroup v2 path as the host names it ("/kubepods.slice/…/cri-containerd-<id>.scope"),
 * from its own /proc/self/cgroup (the process's, never the host root's); null where it cannot be
 * told: outside cgroup v2, or in a cgroup namespace of its own, which shows "/" (or "/..").
 */
export function ownCgroup(file = '/proc/self/cgroup'): string | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').slice(0, 64 * 1024);
  } catch {
    return null;
  }
  const path = text.split('\n').find((l) => l.startsWith('0::'))?.slice(3).trim();
  return path && path.startsWith('/') && path !== '/' && !path.startsWith('/..') ? path : null;
}

/** Where the agent finds itself: its own /proc/self/cgroup and pid (tests point them at a fixture). */
interface Self {
  cgroupFile: string;
  pid: number;
}

export function triageSources(s: Sources, self: Self = { cgroupFile: '/proc/self/cgroup', pid: process.pid }): TriageSources {
  const kernelProblems = new KernelProblemsSource(s.kmsg, s.hostFs);
  const d = deadlines(s.config);
  return {
    nodeName: s.config.nodeName,
    criEndpoint: s.config.criEndpoint,
    deadlines: d,
    async runtime() {
      if (!s.cri) throw noCriSocket(s.config.hostRoot);
      const [version, status] = await Promise.all([s.cri.version(), s.cri.status(true)]);
      return { version, status };
    },
    pods: async () => requireRuntime(s).pods(),
    containers: async () => requireRuntime(s).containers(),
    async cgroups(warnings) {
      const r = await s.cgroups.records();
      warnings.push(...r.warnings);
      return r.items;
    },
    async throttling(windowMs, signal, warnings) {
      const r = await s.cgroups.throttling(windowMs, { signal, names: false });
      warnings.push(...r.warnings);
      // The agent's own container is left out: the measuring is the agent's own work, under its
      // pod's CPU limit, and its throttling is the cost of the triage, not a finding about the node.
      // Its cgroup is the one /proc/self/cgroup names, or, in a cgroup namespace of its own (which
      // names no host path), the one whose cgroup.procs lists the agent's pid (the kernel writes
      // pids as the reader's pid namespace sees them). Only throttled containers are looked at.
      const own = ownCgroup(self.cgroupFile);
      const pid = String(self.pid);
      const isOwn = async (path: string) =>
        own !== null
          ? path === own || own.startsWith(`${path}/`)
          : ((await s.hostFs.readFile(`${CGROUP_MOUNT}${path}/cgroup.procs`, 64 * 1024).catch(() => null)) ?? '').split('\n').includes(pid);
      const entries = [];
      for (const e of r.report.entries) if (e.throttledPeriods === 0 || !(await isOwn(e.path))) entries.push(e);
      return { ...r.report, entries };
    },
    host: (warnings) => nodeHealth(s.hostFs, { kubeletHealthzUrl: s.config.kubeletHealthz, kubeletTimeoutMs: d.kubeletHealthz, warnings }),
    cni: (info) => readCniState(s.hostFs, cniDirsFromRuntimeInfo(info)),
    kmsg: s.kmsg,
    async oom(signal, ring) {
      const r = await s.oom.kills(signal, ring);
      if (!r.sources.kmsg && !r.sources.journal) throw new Error(`kernel log unreadable: ${r.warnings.join('; ')}`);
      return { kills: r.kills, warnings: r.warnings };
    },
    async kubeletJournal(sinceUs, signal) {
      // newest first: with --since, journalctl counts --lines from the window's oldest record
      const r = await s.journal.query(journalQuery({ units: ['kubelet.service'], sinceUs, tailLines: THRESHOLDS.journalMaxEntries, reverse: true }), signal);
      return { records: r.records, truncated: r.truncated, warnings: r.warnings };
    },
    kernel: (signal, ring) => kernelProblems.read(signal, ring),
    facts: (signal, warnings) => nodeFacts(s.hostFs, { cri: s.cri, warnings, signal }),
  };
}
