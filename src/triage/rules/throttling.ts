/** CPU throttling: the throttled share of CFS periods measured over the snapshot's window. */
import type { Finding } from '../../model/triage.js';
import { percent } from '../../format.js';
import { idsOf } from '../findings.js';
import { THRESHOLDS } from '../../rules/thresholds.js';
import { CG, type Rule, who } from './rule.js';

export const throttlingRule: Rule = {
  name: 'throttling',
  ids: idsOf('throttling'),
  run(s, ix) {
    if (!s.throttling.ok) return [];
    const w = s.throttling.value.windowMs;
    return s.throttling.value.entries
      .filter((e) => e.throttledShare !== null && e.throttledShare > THRESHOLDS.throttledShare)
      .map((e): Finding => {
        const subject = ix.subject(e.podUid, e.containerId);
        const quota = e.cpuMax && e.cpuMax.quotaCores !== 'max' ? `${e.cpuMax.quotaCores} cores (cpu.max ${e.cpuMax.quotaUsec} ${e.cpuMax.periodUsec})` : 'no quota';
        return {
          id: 'cpu-throttling',
          severity: 'warning',
          title: `${who(subject)} is CPU-throttled in ${percent(e.throttledShare!)} of periods`,
          detail: `over ${(w / 1000).toFixed(1)} s: ${e.throttledPeriods} of ${e.periods} CFS periods throttled, ${e.throttledSeconds} s throttled, using ${e.usageCores} cores against a quota of ${quota}`,
          evidence: [
            {
              source: 'cgroup',
              path: `${CG}${e.path}/cpu.stat`,
              excerpt: `nr_periods +${e.periods} nr_throttled +${e.throttledPeriods} throttled_usec +${Math.round(e.throttledSeconds * 1e6)} over ${w} ms`,
            },
            ...(e.cpuMax ? [{ source: 'cgroup', path: `${CG}${e.path}/cpu.max`, excerpt: `${e.cpuMax.quotaUsec} ${e.cpuMax.periodUsec}` }] : []),
          ],
          hint: `The container wants more CPU than its limit: raise (or remove) its CPU limit; latency suffers at every throttled period. GET /v1/throttling?window=10s measures again.`,
          subject,
        };
      });
  },
};
