/** Sources of the snapshot that did not answer: the rules needing them did not run. */
import type { Finding, Severity } from '../../model/triage.js';
import { idsOf } from '../findings.js';
import type { Outcome } from '../../lib/deadline.js';
import type { TriageSnapshot } from '../snapshot.js';
import type { Rule } from './rule.js';

/** The snapshot's sources other than the runtime (it has findings of its own), in report order. */
const SOURCES = {
  cgroups: { severity: 'warning', name: 'cgroups' },
  throttling: { severity: 'info', name: 'CPU throttling measurement' },
  host: { severity: 'warning', name: 'node health (/proc, statfs, kubelet healthz)' },
  cni: { severity: 'info', name: 'CNI configuration' },
  oom: { severity: 'info', name: 'kernel log (OOM kills)' },
  kubeletJournal: { severity: 'info', name: 'kubelet journal' },
  kernel: { severity: 'info', name: 'kernel log (problems)' },
  facts: { severity: 'info', name: 'node facts (conntrack, taint, D/Z processes, kubelet certificates and eviction thresholds)' },
  pods: { severity: 'warning', name: 'runtime pod sandboxes' },
  containers: { severity: 'warning', name: 'runtime containers' },
} as const satisfies Partial<Record<keyof TriageSnapshot, { severity: Severity; name: string }>>;

export const sourcesRule: Rule = {
  name: 'sources',
  ids: idsOf('sources'),
  run(s) {
    const out: Finding[] = [];
    for (const key of Object.keys(SOURCES) as (keyof typeof SOURCES)[]) {
      const g: Outcome<unknown> | undefined = s[key];
      if (!g || g.ok) continue; // kernel and facts are optional
      // the runtime's own finding already says it; cgroups and throttling failing alike is one finding
      if ((key === 'pods' || key === 'containers') && !s.runtime.ok) continue;
      if (key === 'throttling' && !s.cgroups.ok) continue;
      out.push({
        id: 'source-unavailable',
        severity: SOURCES[key].severity,
        title: `Could not read the ${SOURCES[key].name}`,
        detail: g.error,
        evidence: [{ source: 'agent', excerpt: g.error }],
        hint: 'The rules that need this source did not run; the rest of the report stands. Check --host-root and the agent\'s privileges (see /readyz).',
      });
    }
    return out;
  },
};

