/**
 * What every timeline producer shares: the asked window and filters, and one bounded,
 * sorted list of events per source. A producer hands each event over with its time in µs
 * and its own sequence (kmsg seq, the journal's read order, the runtime's list order);
 * events outside the window, of other pods, or with no usable time never enter a list.
 */
import { clip } from '../../format.js';
import type { TimelineEvent, TimelineSource } from '../../model/timeline.js';
import { formatMicros, parseRfc3339Micros } from '../../readers/journal/time.js';

interface PodFilter {
  /** pod UIDs */
  uids: ReadonlySet<string>;
  /** "namespace/name" */
  names: ReadonlySet<string>;
}

export interface TimelineQuery {
  /** µs since the epoch, inclusive */
  sinceUs: number;
  /** µs since the epoch, inclusive */
  untilUs: number;
  /** null: every event, with a pod or without */
  pods: PodFilter | null;
  sources: ReadonlySet<TimelineSource>;
  /** the sources were named by the caller: one that is not configured (kube) is a warning, not only a note in `sources` */
  explicitSources?: boolean;
  /** events answered at most: the newest of the window */
  limit: number;
  /** every record of the journal units, not only the notable ones */
  verbose: boolean;
  /** µs since the epoch when asked: a record stamped later than FUTURE_SLACK_US past it has no usable time */
  nowUs: number;
}

/** A record may be stamped this far ahead of the agent's clock (clocks of one node disagree a little); later is not a time. */
const FUTURE_SLACK_US = 60_000_000;

export const TIMELINE_LIMITS = {
  defaultLimit: 500,
  maxLimit: 5000,
  /** a summary is one line of this many characters at most */
  summaryChars: 400,
  /** an evidence excerpt (the record's own text) */
  excerptChars: 2000,
  /** the default window: the last hour */
  defaultWindowMs: 3_600_000,
} as const;

/** An event with what orders it. */
export interface Timed {
  us: number;
  /** the source's own order among its events of one instant */
  seq: number;
  event: TimelineEvent;
}

export function podMatches(f: PodFilter, pod: TimelineEvent['pod']): boolean {
  if (!pod) return false;
  if (pod.uid !== null && f.uids.has(pod.uid)) return true;
  return pod.namespace !== null && pod.name !== null && f.names.has(`${pod.namespace}/${pod.name}`);
}

/** Summaries are one bounded line (the text form escapes what is left). */
export const summaryText = (s: string): string => clip(s.replace(/\s*\n\s*/g, ' ⏎ '), TIMELINE_LIMITS.summaryChars);
export const excerptText = (s: string): string => clip(s, TIMELINE_LIMITS.excerptChars);

/** Before a finding's first record (its cause is most often earlier) and after its last. */
const FINDING_WINDOW_US = { before: 5 * 60_000_000, after: 60_000_000 } as const;

/**
 * `{ window }` around a finding's records (RFC 3339 times), or nothing when none has a usable
 * time. A time later than `nowMs` (and the slack a timeline allows) is not one, as in a timeline.
 */
export function findingWindow(times: readonly (string | null | undefined)[], nowMs = Date.now()): { window?: { since: string; until: string } } {
  let lo = Infinity;
  let hi = -Infinity;
  for (const t of times) {
    const us = t ? parseRfc3339Micros(t) : null;
    if (us === null || us <= 0 || us > nowMs * 1000 + FUTURE_SLACK_US) continue;
    lo = Math.min(lo, us);
    hi = Math.max(hi, us);
  }
  if (lo === Infinity) return {};
  return { window: { since: formatMicros(lo - FINDING_WINDOW_US.before), until: formatMicros(hi + FINDING_WINDOW_US.after) } };
}

/** An event held by SourceEvents: `n` is the order it came in, the last tie-break (a stable sort's). */
interface Held extends Timed {
  n: number;
}

/** a older than b: time, then the source's sequence, then the order they came in */
const older = (a: Held, b: Held): boolean => a.us !== b.us ? a.us < b.us : a.seq !== b.seq ? a.seq < b.seq : a.n < b.n;

/**
 * One source's events: within the window and the pod filter, the newest `limit` kept as
 * they come (a min-heap of at most `limit`: no more can reach the answer, so a source of
 * any size holds no more), sorted when listed. `dropped` counts what the bound left out.
 */
export class SourceEvents {
  /** a min-heap on `older`: the oldest held at [0] */
  private readonly heap: Held[] = [];
  private n = 0;
  /** records whose time was absent, not a time, or later than now */
  untimed = 0;
  dropped = 0;

  constructor(private readonly q: TimelineQuery) {}

  /** `event` without its time: every time is written from `us` alike (RFC 3339, µs, UTC) */
  add(us: number | null, seq: number, event: () => Omit<TimelineEvent, 'time'>): void {
    if (us === null || !Number.isFinite(us) || us <= 0 || us > this.q.nowUs + FUTURE_SLACK_US) {
      this.untimed++;
      return;
    }
    if (us < this.q.sinceUs || us > this.q.untilUs) return;
    const n = this.n++;
    const full = this.heap.length >= this.q.limit;
    // without a pod filter every event of the window counts: one older than all held is left out unbuilt
    if (full && !this.q.pods && (this.heap.length === 0 || !older(this.heap[0]!, { us, seq, n, event: null! }))) {
      this.dropped++;
      return;
    }
    const time = formatMicros(us);
    // time first in the record, and from `us` whatever the factory gave
    const e: TimelineEvent = { time, ...event() };
    e.time = time;
    if (this.q.pods && !podMatches(this.q.pods, e.pod)) return;
    const h: Held = { us, seq, n, event: e };
    if (!full) return this.push(h);
    this.dropped++;
    if (this.heap.length > 0 && older(this.heap[0]!, h)) this.replaceOldest(h);
  }

  /** Sorted oldest first, the newest `limit` of them. */
  list(): Timed[] {
    return [...this.heap].sort((a, b) => (older(a, b) ? -1 : older(b, a) ? 1 : 0)).map(({ us, seq, event }) => ({ us, seq, event }));
  }

  private push(h: Held): void {
    const a = this.heap;
    let i = a.length;
    a.push(h);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!older(h, a[p]!)) break;
      a[i] = a[p]!;
      i = p;
    }
    a[i] = h;
  }

  private replaceOldest(h: Held): void {
    const a = this.heap;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const c = l + 1 < a.length && older(a[l + 1]!, a[l]!) ? l + 1 : l;
      if (!older(a[c]!, h)) break;
      a[i] = a[c]!;
      i = c;
    }
    a[i] = h;
  }
}
