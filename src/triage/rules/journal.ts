/** kubelet's journal: E/W/F lines of the last minutes matching rules/journal-patterns.ts's phrases, one finding per kind. */
import type { Evidence, Finding } from '../../model/triage.js';
import { clip } from '../../format.js';
import { containsInOrder } from '../../lib/phrases.js';
import { JOURNAL_MATCH_PREFIX, type JournalPattern, KUBELET_JOURNAL_PATTERNS } from '../../rules/journal-patterns.js';
import { THRESHOLDS } from '../../rules/thresholds.js';
import { findingWindow } from '../../view/timeline/window.js';
import { idsOf, kindOf } from '../findings.js';
import { plural, type Rule } from './rule.js';

/** Does the message hold one of the pattern's phrases? Linear in the (bounded) message. */
export function matchesJournalPattern(p: JournalPattern, message: string): boolean {
  const m = message.length > JOURNAL_MATCH_PREFIX ? message.slice(0, JOURNAL_MATCH_PREFIX) : message;
  return p.phrases.some((ph) => (typeof ph === 'string' ? m.includes(ph) : containsInOrder(m, ph)));
}

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
      const k = kindOf(p.id);
      out.push({
        id: p.id,
        severity: k.severities[0]!,
        title: k.title,
        detail: `${plural(h.n, 'kubelet log line')} in the last ${THRESHOLDS.journalWindowMinutes} minutes (${h.first} … ${h.last})`,
        evidence: h.ev,
        hint: k.todo,
        ...findingWindow([h.first, h.last], s.nowMs),
      });
    }
    return out;
  },
};
