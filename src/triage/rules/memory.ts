/** Containers whose working set is close to memory.max, and cgroups held back at memory.high. */
import type { CgroupRecord, PsiLine } from '../../model/cgroup.js';
import type { Evidence, Finding } from '../../model/triage.js';
import { humanSize, percent, shortId } from '../../format.js';
import { idsOf } from '../findings.js';
import { THRESHOLDS } from '../../rules/thresholds.js';
import { CG, type Rule, type SnapshotIndex, who } from './rule.js';

export const memoryRule: Rule = {
  name: 'memory',
  ids: idsOf('memory'),
  run(s, ix) {
    const out: Finding[] = [];
    for (const r of s.cgroups.ok ? s.cgroups.value : []) {
      const high = memoryHighReclaim(r, ix);
      if (high) out.push(high);
      if (r.kind !== 'container' || r.sandbox) continue;
      const max = r.memory.max;
      const ws = r.memory.workingSet;
      if (max === null || max === 'max' || max <= 0 || ws === null) continue;
      const ratio = ws / max;
      if (ratio <= THRESHOLDS.memoryNearLimit) continue;
      const subject = ix.subject(r.podUid, r.containerId);
      out.push({
        id: 'memory-near-limit',
        severity: 'warning',
        title: `${who(subject)} uses ${percent(ratio)} of its memory limit`,
        detail: `working set ${humanSize(ws)} of memory.max ${humanSize(max)} (memory.current ${r.memory.current === null ? '?' : humanSize(r.memory.current)}, inactive_file ${r.memory.inactiveFile === null ? '?' : humanSize(r.memory.inactiveFile)}): an OOM kill is near`,
        evidence: [
          { source: 'cgroup', path: `${CG}${r.path}/memory.current`, excerpt: String(r.memory.current) },
          { source: 'cgroup', path: `${CG}${r.path}/memory.max`, excerpt: String(max) },
          { source: 'cgroup', path: `${CG}${r.path}/memory.stat`, excerpt: `inactive_file ${r.memory.inactiveFile}` },
        ],
        hint: `Raise the memory limit or find what grows: GET /v1/containers/${shortId(r.containerId!)}/processes lists RSS per process.`,
        subject,
      });
    }
    return out;
  },
};

const psiText = (l: PsiLine) => `some avg10=${l.avg10.toFixed(2)} avg60=${l.avg60.toFixed(2)} avg300=${l.avg300.toFixed(2)} total=${l.total}`;

/**
 * memory.high reclaim throttling: above memory.high the kernel reclaims the cgroup's
 * memory and, when that does not bring it back under, makes each allocating task sleep
 * (mem_cgroup_handle_over_high, counted as a memory stall in PSI). It never OOM-kills.
 *
 * Judged on the one reading the snapshot has, and honestly so: the `high` counter of
 * memory.events counts since the cgroup was created, so alone it may be an old episode,
 * and a second reading over the window would show it growing but not whether it hurts
 * (a cgroup full of page cache crosses memory.high all day and reclaims it for free).
 * What says "held back now" is memory.current at memory.high (the kernel compares
 * exactly these) together with memory.pressure's some avg10: the share of the last 10 s
 * its tasks stalled on memory, which the kernel itself averages over time. Where the
 * kernel has no PSI (psi=0), the working set (current less inactive_file) at memory.high
 * stands in: cache alone cannot hold it there. A counter of 0 means it never got there.
 *
 * A cgroup with an OOM kill is left to the oom rule: memory.max, not memory.high, was
 * what bit. Sandboxes (pause) are left out. Pods are judged on their own memory.high and
 * their own events (memory.events.local; the hierarchical file also counts their containers').
 */
function memoryHighReclaim(r: CgroupRecord, ix: SnapshotIndex): Finding | null {
  if (r.sandbox) return null;
  const m = r.memory;
  const high = m.high;
  if (high === null || high === 'max' || high <= 0 || m.current === null) return null;
  if ((m.events?.oomKill ?? 0) > 0) return null;
  const local = r.kind === 'pod' && m.eventsLocal !== null;
  const events = local ? m.eventsLocal : m.events;
  const count = events?.high ?? null;
  if (count === null || count <= 0) return null;
  const ratio = m.current / high;
  if (ratio < THRESHOLDS.memoryHighNear) return null;
  const some = r.pressure.memory?.some ?? null;
  if (some ? some.avg10 < THRESHOLDS.memoryHighPressureSome : m.workingSet === null || m.workingSet / high < THRESHOLDS.memoryHighNear) return null;

  const subject = ix.subject(r.podUid, r.containerId);
  const path = `${CG}${r.path}`;
  const evidence: Evidence[] = [
    { source: 'cgroup', path: `${path}/memory.high`, excerpt: String(high) },
    { source: 'cgroup', path: `${path}/memory.current`, excerpt: String(m.current) },
    { source: 'cgroup', path: `${path}/${local ? 'memory.events.local' : 'memory.events'}`, excerpt: `high ${count}` },
    some
      ? { source: 'cgroup', path: `${path}/memory.pressure`, excerpt: psiText(some) }
      : { source: 'cgroup', path: `${path}/memory.stat`, excerpt: `inactive_file ${m.inactiveFile}` },
  ];
  const stall = some ? `its tasks stalled on memory ${some.avg10.toFixed(2)}% of the last 10 s (memory.pressure some avg10)` : `working set ${humanSize(m.workingSet!)} (no memory.pressure: the kernel has no PSI)`;
  const max = m.max === null ? '' : m.max === 'max' ? '; memory.max is unlimited' : `; memory.max is ${humanSize(m.max)}`;
  const look = r.containerId ? `GET /v1/containers/${shortId(r.containerId)}/processes lists RSS per process` : `GET /v1/cgroups/${r.podUid} shows which of its containers holds the memory`;
  return {
    id: 'memory-high-reclaim',
    severity: 'warning',
    title: `${who(subject)} is throttled at memory.high (${humanSize(high)})`,
    detail: `memory.current ${humanSize(m.current)} is ${percent(ratio)} of memory.high ${humanSize(high)}; memory.events counts ${count} high events (allocations over memory.high, reclaimed and slowed); ${stall}; no OOM kill: the kernel slows it instead${max}`,
    evidence,
    hint: `memory.high throttles, it never kills: raise it, or what it comes from (with the MemoryQoS feature gate kubelet sets memory.high to request + memoryThrottlingFactor × (limit − request): raise resources.limits.memory or the factor in kubelet's config), or fix what the workload keeps in memory: ${look}.`,
    subject,
  };
}
