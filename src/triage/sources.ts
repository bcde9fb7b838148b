/** The triage snapshot's reads, from the agent's sources (no I/O of its own). */
import { cniDirsFromRuntimeInfo, readCniState } from '../readers/cni/cni.js';
import { journalQuery } from '../readers/journal/query.js';
import { noCriSocket } from '../readers/cri/errors.js';
import { requireRuntime, type Sources } from '../sources.js';
import { KernelProblemsSource } from '../view/kernel-problems.js';
import { nodeFacts } from '../readers/node/facts.js';
import { nodeHealth } from '../view/node-health.js';
import { THRESHOLDS } from './thresholds.js';
import type { TriageSources } from './snapshot.js';

export function triageSources(s: Sources): TriageSources {
  const kernelProblems = new KernelProblemsSource(s.kmsg, s.hostFs);
  return {
    nodeName: s.config.nodeName,
    criEndpoint: s.config.criEndpoint,
    criTimeoutMs: s.config.criTimeoutMs,
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
      return r.report;
    },
    host: (warnings) => nodeHealth(s.hostFs, { kubeletHealthzUrl: s.config.kubeletHealthz, warnings }),
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
