/** kubelet's journal: E/W/F lines of the last minutes matching thresholds.ts's phrases, one finding per kind. */
import type { Evidence, Finding } from '../../model/triage.js';
import { clip } from '../../format.js';
import { idsOf } from '../findings.js';
import { KUBELET_JOURNAL_PATTERNS, matchesJournalPattern, THRESHOLDS } from '../thresholds.js';
import { plural, type Rule } from './rule.js';

export const journalRule: Rule = {
  name: 'journal',
  ids: idsOf('journal'),
  run(s) {
    if (!s.kubeletJournal.ok) return [];
    const cutoffUs = (s.nowMs - THRESHOLDS.journalWindowMinutes * 60_000) * 1000;
    const out: Finding[] = [];
    const hits = new Map<string, { first: string; last: string; n: number; ev: Evidence[] }>();
    for (const r of s.kubeletJournal.value.records) {
      const sev = r.klogSeverity;
      if (sev === 'I' || (sev === null && (r.priority ?? 6) > 4)) continue;
      if (Date.parse(r.time) * 1000 < cutoffUs) continue;
      for (const p of KUBELET_JOURNAL_PATTERNS) {
        if (!matchesJournalPattern(p, r.message)) continue;
        const h = hits.get(p.id) ?? { first: r.time, last: r.time, n: 0, ev: [] };
        h.n++;
        h.last = r.time;
        if (h.ev.length < THRESHOLDS.maxEvidence) h.ev.push({ source: 'journal', cursor: r.cursor, excerpt: clip(`${r.time} ${r.message}`) });
        hits.set(p.id, h);
        break;
      }
    }
    for (const p of KUBELET_JOURNAL_PATTERNS) {
      const h = hits.get(p.id);
      if (!h) continue;
      out.push({
        id: p.id,
        severity: p.severity,
        title: p.title,
        detail: `${plural(h.n, 'kubelet log line')} in the last ${THRESHOLDS.journalWindowMinutes} minutes (${h.first} … ${h.last})`,
        evidence: h.ev,
        hint: p.hint,
      });
    }
    return out;
  },
};
