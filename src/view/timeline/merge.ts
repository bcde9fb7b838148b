/**
 * The merge of the sources' sorted lists into one timeline: the newest `limit` events,
 * oldest first. Walks the lists from their ends (a k-way merge backwards), so it touches at
 * most `limit` events whatever the lists hold; an instant's events are in source order
 * (TIMELINE_SOURCES), then each source's own sequence.
 */
import { TIMELINE_SOURCES, type TimelineEvent, type TimelineSource } from '../../model/timeline.js';
import type { Timed } from './window.js';

const RANK = new Map<TimelineSource, number>(TIMELINE_SOURCES.map((s, i) => [s, i]));

/** a before b: time, then source, then sequence */
function before(a: Timed, b: Timed): boolean {
  if (a.us !== b.us) return a.us < b.us;
  const ra = RANK.get(a.event.source)!;
  const rb = RANK.get(b.event.source)!;
  return ra !== rb ? ra < rb : a.seq < b.seq;
}

export function mergeNewest(lists: readonly (readonly Timed[])[], limit: number): { events: TimelineEvent[]; truncated: boolean } {
  const pos = lists.map((l) => l.length - 1);
  const out: TimelineEvent[] = [];
  for (;;) {
    let best = -1;
    for (let i = 0; i < lists.length; i++) {
      if (pos[i]! < 0) continue;
      if (best < 0 || before(lists[best]![pos[best]!]!, lists[i]![pos[i]!]!)) best = i;
    }
    if (best < 0) return { events: out.reverse(), truncated: false };
    if (out.length === limit) return { events: out.reverse(), truncated: true };
    out.push(lists[best]![pos[best]!]!.event);
    pos[best]!--;
  }
}
