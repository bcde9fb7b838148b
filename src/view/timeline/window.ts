/**
 * What every timeline producer shares: the asked window and filters, and one bounded,
 * sorted list of events per source. A producer hands each event over with its time in µs
 * and its own sequence (kmsg seq, the journal's read order, the runtime's list order);
 * events outside the window, of other pods, or with no usable time never enter a list.
 */
import { clip } from '../../format.js';
import type { TimelineEvent, TimelineSource } from '../../model/timeline.js';
import { formatMicros, parseRfc3339Micros } from '../../readers/journal/time.js';

export interface PodFilter {
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
  /** a window is at most this long */
  maxWindowMs: 7 * 86_400_000,
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

export const byTime = (a: Timed, b: Timed): number => a.us - b.us || a.seq - b.seq;

/**
 * One source's events: within the window and the pod filter, sorted, the newest `limit`
 * kept (no more can reach the answer). `dropped` counts what the bound left out.
 */
export class SourceEvents {
  private readonly items: Timed[] = [];
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
    const time = formatMicros(us);
    // time first in the record, and from `us` whatever the factory gave
    const e: TimelineEvent = { time, ...event() };
    e.time = time;
    if (this.q.pods && !podMatches(this.q.pods, e.pod)) return;
    this.items.push({ us, seq, event: e });
  }

  /** Sorted oldest first, the newest `limit` of them. */
  list(): Timed[] {
    this.items.sort(byTime);
    const over = this.items.length - this.q.limit;
    if (over > 0) {
      this.dropped += over;
      return this.items.slice(over);
    }
    return this.items;
  }
}
