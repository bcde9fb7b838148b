/**
 * serve --bundle's /v1/timeline with parameters the capture did not store: the stored
 * /v1/timeline answer (checked as untrusted input) narrowed by the route's own parameters,
 * durations counted back from the end of the captured window, as `nodetruth timeline --bundle`.
 * Nothing is read again; what the capture did not hold is said in warnings.
 */
import { Problem } from '../errors.js';
import { parseRfc3339Micros } from '../readers/journal/time.js';
import { timelineQueryAt, timelineText } from '../server/routes/timeline.js';
import { parseStoredTimeline, replayTimeline } from '../view/timeline/replay.js';
import type { StoredAnswer } from './read.js';

/** The narrowed answer; null when the bundle holds no timeline to narrow (the caller says so). */
export function narrowedTimeline(stored: StoredAnswer | undefined, query: Record<string, unknown>, text: boolean): { type: string; body: string } | null {
  if (!stored || stored.status !== 200) return null;
  const parsed = parseStoredTimeline(stored.body.toString('utf8'));
  if ('reason' in parsed) return null;
  const { format: _format, ...params } = query;
  const r = timelineQueryAt(params, parseRfc3339Micros(parsed.timeline.until)!);
  if ('issues' in r) {
    const i = r.issues[0]!;
    throw new Problem('bad_parameter', `${i.param}: ${i.message}`, { param: i.param });
  }
  const t = replayTimeline(parsed.timeline, r.query);
  return text ? { type: 'text/plain; charset=utf-8', body: timelineText(t) } : { type: 'application/json; charset=utf-8', body: JSON.stringify(t) };
}
