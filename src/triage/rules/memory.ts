/** Containers whose working set is close to memory.max. */
import type { Finding } from '../../model/triage.js';
import { humanSize, percent, shortId } from '../../format.js';
import { idsOf } from '../findings.js';
import { THRESHOLDS } from '../thresholds.js';
import { CG, type Rule, who } from './rule.js';

export const memoryRule: Rule = {
  name: 'memory',
  ids: idsOf('memory'),
  run(s, ix) {
    const out: Finding[] = [];
    for (const r of s.cgroups.ok ? s.cgroups.value : []) {
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
