/**
 * The timeline as it happens: the window's events first, then every `intervalMs` the events
 * of the last stretch that were not sent yet. Each poll is one bounded timeline (readTimeline,
 * every source within its deadline); polls overlap by `overlapMs`, since a record may arrive
 * after its own time (journald reads the kernel ring late, a container's finishedAt is known
 * only once it exited), and what was sent is remembered only for that overlap. Kubernetes
 * Events are followed only when `source=kube` is asked: each poll lists them once per pod.
 */
import { sleep } from '../../lib/concurrency.js';
import type { TimelineEvent } from '../../model/timeline.js';
import { parseRfc3339Micros } from '../../readers/journal/time.js';
import { readTimeline, type TimelineDeps, type TimelineOptions } from './index.js';
import type { TimelineQuery } from './window.js';

export type FollowItem = { kind: 'event'; event: TimelineEvent } | { kind: 'warning'; warning: string };

export const FOLLOW_TIMING = { intervalMs: 5000, overlapMs: 30_000 } as const;

/** What tells one event from another of the same instant: its source, kind and first record. */
const keyOf = (e: TimelineEvent): string => {
  const ev = e.evidence[0];
  return `${e.source}|${e.kind}|${e.time}|${ev ? `${ev.source}|${ev.seq ?? ''}|${ev.cursor ?? ''}|${ev.call ?? ''}` : e.summary}`;
};

export async function* followTimeline(
  deps: TimelineDeps,
  q: TimelineQuery,
  o: Omit<TimelineOptions, 'signal' | 'observedAt'> & { signal: AbortSignal; timing?: { intervalMs: number; overlapMs: number }; now?: () => number },
): AsyncGenerator<FollowItem> {
  const { intervalMs, overlapMs } = o.timing ?? FOLLOW_TIMING;
  const now = o.now ?? (() => Date.now() * 1000);
  /** key → µs of what was sent within the overlap */
  let sent = new Map<string, number>();
  let sinceUs = q.sinceUs;
  let lastWarnings = new Set<string>();
  const sources = q.explicitSources ? q.sources : new Set([...q.sources].filter((s) => s !== 'kube'));
  while (!o.signal.aborted) {
    const untilUs = now();
    const t = await readTimeline(deps, { ...q, sources, sinceUs, untilUs, nowUs: untilUs }, { deadlines: o.deadlines, signal: o.signal });
    if (o.signal.aborted) return;
    // a warning once while it lasts, not every poll
    const warnings = new Set(t.warnings);
    for (const w of warnings) if (!lastWarnings.has(w)) yield { kind: 'warning', warning: w };
    lastWarnings = warnings;
    for (const e of t.events) {
      const k = keyOf(e);
      if (sent.has(k)) continue;
      sent.set(k, parseRfc3339Micros(e.time) ?? untilUs);
      yield { kind: 'event', event: e };
    }
    sinceUs = Math.max(q.sinceUs, untilUs - overlapMs * 1000);
    const keep = new Map<string, number>();
    for (const [k, us] of sent) if (us >= sinceUs) keep.set(k, us);
    sent = keep;
    await sleep(intervalMs, o.signal);
  }
}
