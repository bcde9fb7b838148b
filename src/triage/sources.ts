/** The triage snapshot's reads, from the agent's sources (no I/O of its own). */
import type { AppDeps } from '../server/deps.js';
import { logSources } from '../server/log-sources.js';
import { walkKubepods } from '../sources/cgroup/cgroups.js';
import { runtimeIndex } from '../sources/cgroup/names.js';
import { measureThrottling } from '../sources/cgroup/throttling.js';
import { readRecords, requireV2 } from '../sources/cgroup/view.js';
import { cniDirsFromRuntimeInfo, readCniState } from '../sources/cni/cni.js';
import { noCriSocket } from '../sources/cri/errors.js';
import { nodeHealth } from '../sources/node/health.js';
import { THRESHOLDS } from './thresholds.js';
import type { TriageSources } from './snapshot.js';

export function triageSources(deps: AppDeps): TriageSources {
  const noCri = () => noCriSocket(deps.config.hostRoot);
  return {
    nodeName: deps.config.nodeName,
    criEndpoint: deps.config.criEndpoint,
    async runtime() {
      if (!deps.cri) throw noCri();
      const [version, status] = await Promise.all([deps.cri.version(), deps.cri.status(true)]);
      return { version, status };
    },
    async pods() {
      if (!deps.runtime) throw noCri();
      return deps.runtime.pods();
    },
    async containers() {
      if (!deps.runtime) throw noCri();
      return deps.runtime.containers();
    },
    async cgroups(warnings) {
      await requireV2(deps.hostFs);
      const [found, join] = await Promise.all([walkKubepods(deps.hostFs, { warnings }), runtimeIndex(deps.cri, Math.min(deps.config.criTimeoutMs, 1000))]);
      return readRecords(deps.hostFs, found, join.index, undefined, warnings);
    },
    async throttling(windowMs, signal, warnings) {
      await requireV2(deps.hostFs);
      return measureThrottling(deps.hostFs, windowMs, { signal, warnings });
    },
    host: (warnings) => nodeHealth(deps.hostFs, { kubeletHealthzUrl: deps.config.kubeletHealthz, warnings }),
    cni: (info) => readCniState(deps.hostFs, cniDirsFromRuntimeInfo(info)),
    async oom(signal) {
      const r = await logSources(deps).oom.kills(signal);
      if (!r.sources.kmsg && !r.sources.journal) throw new Error(`kernel log unreadable: ${r.warnings.join('; ')}`);
      return { kills: r.kills, warnings: r.warnings };
    },
    async kubeletJournal(sinceUs, signal) {
      const r = await logSources(deps).journal.query(
        {
          kind: 'journal',
          units: ['kubelet.service'],
          sinceUs,
          untilUs: null,
          tailLines: THRESHOLDS.journalMaxEntries,
          pattern: null,
          boot: null,
          priority: null,
          follow: false,
          matches: [],
        },
        signal,
      );
      return { records: r.records, truncated: r.truncated, warnings: r.warnings };
    },
  };
}
