/** The triage snapshot's reads, from the agent's sources (no I/O of its own but its own cgroup's name). */
import { readFileSync } from 'node:fs';
import { cniDirsFromRuntimeInfo, readCniState } from '../readers/cni/cni.js';
import { journalQuery } from '../readers/journal/query.js';
import { noCriSocket } from '../readers/cri/errors.js';
import { requireRuntime, type Sources } from '../sources.js';
import { KernelProblemsSource } from '../view/kernel-problems.js';
import { nodeFacts } from '../readers/node/facts.js';
import { nodeHealth } from '../view/node-health.js';
import { deadlines } from '../deadlines.js';
import { THRESHOLDS } from './thresholds.js';
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

/** `selfCgroupFile`: where the agent reads its own cgroup (tests point it at a fixture). */
export function triageSources(s: Sources, selfCgroupFile?: string): TriageSources {
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
      const self = ownCgroup(selfCgroupFile);
      if (!self) return r.report;
      return { ...r.report, entries: r.report.entries.filter((e) => e.path !== self && !self.startsWith(`${e.path}/`)) };
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
      const r = await s.journal.query(journalQuery({ units: ['kubelet.service'], sinceUs, tailLines: THRESHOLDS.journalMaxEntries }), signal);
      return { records: r.records, truncated: r.truncated, warnings: r.warnings };
    },
    kernel: (signal, ring) => kernelProblems.read(signal, ring),
    facts: (signal, warnings) => nodeFacts(s.hostFs, { cri: s.cri, warnings, signal }),
  };
}
