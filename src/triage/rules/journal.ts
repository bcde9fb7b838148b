/** kubelet's journal: E/W/F lines of the last minutes matching rules/journal-patterns.ts's phrases, one finding per kind. */
import type { JournalRecord } from '../../readers/journal/record.js';
import type { Evidence, Finding } from '../../model/triage.js';
import { clip } from '../../format.js';
import { containsInOrder } from '../../lib/phrases.js';
import { JOURNAL_MATCH_PREFIX, type JournalPattern, KUBELET_JOURNAL_PATTERNS, type Phrase } from '../../rules/journal-patterns.js';
import { THRESHOLDS } from '../../rules/thresholds.js';
import { findingWindow } from '../../view/timeline/window.js';
import { idsOf, kindOf } from '../findings.js';
import { plural, type Rule } from './rule.js';

/** Does the message's searched prefix hold one of the phrases? Linear in the (bounded) message. */
function holdsPhrase(phrases: readonly Phrase[], message: string): boolean {
  const m = message.length > JOURNAL_MATCH_PREFIX ? message.slice(0, JOURNAL_MATCH_PREFIX) : message;
  return phrases.some((ph) => (typeof ph === 'string' ? m.includes(ph) : containsInOrder(m, ph)));
}

/** Does the message hold one of the pattern's phrases? */
export function matchesJournalPattern(p: JournalPattern, message: string): boolean {
  return holdsPhrase(p.phrases, message);
}

interface Hits {
  first: string;
  last: string;
  n: number;
  ev: Evidence[];
}

function count(h: Hits | undefined, r: JournalRecord): Hits {
  const out = h ?? { first: r.time, last: r.time, n: 0, ev: [] };
  out.n++;
  out.last = r.time;
  if (out.ev.length < THRESHOLDS.maxEvidence) out.ev.push({ source: 'journal', cursor: r.cursor, excerpt: clip(`${r.time} ${r.message}`) });
  return out;
}

function merge(a: Hits | undefined, b: Hits): Hits {
  if (!a) return b;
  return {
    first: a.first < b.first ? a.first : b.first,
    last: a.last > b.last ? a.last : b.last,
    n: a.n + b.n,
    ev: [...a.ev, ...b.ev].slice(0, THRESHOLDS.maxEvidence),
  };
}

export const journalRule: Rule = {
  name: 'journal',
  ids: idsOf('journal'),
  run(s) {
    if (!s.kubeletJournal.ok) return [];
    const cutoffUs = (s.nowMs - THRESHOLDS.journalWindowMinutes * 60_000) * 1000;
    const out: Finding[] = [];
    const hits = new Map<string, Hits>();
    // the "not yet" lines by pattern and kubelet process: kept only when they outlast its start
    const starting = new Map<string, { id: string; hits: Hits }>();
    for (const r of s.kubeletJournal.value.records) {
      const sev = r.klogSeverity;
      if (sev === 'I' || (sev === null && (r.priority ?? 6) > 4)) continue;
      if (Date.parse(r.time) * 1000 < cutoffUs) continue;
      for (const p of KUBELET_JOURNAL_PATTERNS) {
        if (!matchesJournalPattern(p, r.message)) continue;
        if (p.untilFirstSuccess && holdsPhrase(p.untilFirstSuccess, r.message)) {
          const key = `${p.id} ${r.pid ?? ''}`;
          const g = starting.get(key);
          starting.set(key, { id: p.id, hits: count(g?.hits, r) });
        } else {
          hits.set(p.id, count(hits.get(p.id), r));
        }
        break;
      }
    }
    for (const { id, hits: h } of starting.values()) {
      if (Date.parse(h.last) - Date.parse(h.first) > THRESHOLDS.kubeletStartupSeconds * 1000) hits.set(id, merge(hits.get(id), h));
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
