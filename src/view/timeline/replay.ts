/**
 * A timeline replayed from a capture: the stored /v1/timeline answer (a bundle is untrusted
 * input: checked field by field, bounded, refused with the reason) narrowed by the same query
 * a live timeline takes. Nothing is read again, so what the capture did not hold (an earlier
 * window, more events than its limit, every journal record) is said, not invented.
 */
import { z } from 'zod';
import { TIMELINE_SOURCES, type Timeline, type TimelineEvent, type TimelineSource } from '../../model/timeline.js';
import { formatMicros, parseRfc3339Micros } from '../../readers/journal/time.js';
import { podMatches, TIMELINE_LIMITS, type TimelineQuery } from './window.js';

const time = z.string().max(64).refine((s) => parseRfc3339Micros(s) !== null, 'not an RFC 3339 time');
const text = (max: number) => z.string().max(max);
const nullable = (max: number) => z.string().max(max).nullable();

const eventSchema = z.object({
  time,
  source: z.enum(TIMELINE_SOURCES),
  kind: text(200),
  severity: z.enum(['critical', 'warning', 'info']),
  pod: z.object({ namespace: nullable(253), name: nullable(253), uid: nullable(64) }).optional(),
  container: z.object({ name: nullable(253), id: nullable(128), attempt: z.number().int().nonnegative().nullable() }).optional(),
  summary: text(4 * TIMELINE_LIMITS.summaryChars),
  evidence: z
    .array(z.object({ source: text(32), path: text(4096).optional(), call: text(4096).optional(), cursor: text(4096).optional(), seq: z.number().optional(), excerpt: text(4 * TIMELINE_LIMITS.excerptChars) }))
    .max(64),
});

const sourceState = z.object({ ok: z.boolean(), events: z.number(), ms: z.number(), error: text(4096).optional() });

const storedSchema = z.object({
  observedAt: time,
  since: time,
  until: time,
  limit: z.number().int().positive(),
  verbose: z.boolean(),
  clock: z.object({ kernel: z.enum(['btime', 'agent']), bootTime: time, detail: text(1000) }),
  events: z.array(eventSchema).max(TIMELINE_LIMITS.maxLimit),
  truncated: z.boolean(),
  sources: z.partialRecord(z.enum(TIMELINE_SOURCES), sourceState),
  warnings: z.array(text(8192)).max(1000),
});

/** The stored answer, or the reason it is not a timeline. */
export function parseStoredTimeline(body: string): { timeline: Timeline } | { reason: string } {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (err) {
    return { reason: `the stored /v1/timeline answer is not JSON (${(err as Error).message.slice(0, 120)})` };
  }
  const r = storedSchema.safeParse(doc);
  if (!r.success) return { reason: `the stored /v1/timeline answer is not a timeline (${r.error.issues.slice(0, 3).map((i) => `${i.path.join('.').slice(0, 60) || '(top)'}: ${i.message.slice(0, 80)}`).join('; ')})` };
  return { timeline: r.data as Timeline };
}

/** The stored timeline narrowed by `q`: window, pods, sources, the newest `limit`. */
export function replayTimeline(stored: Timeline, q: TimelineQuery): Timeline {
  const storedSince = parseRfc3339Micros(stored.since)!;
  const storedUntil = parseRfc3339Micros(stored.until)!;
  const inWindow = (e: TimelineEvent) => {
    const us = parseRfc3339Micros(e.time)!;
    return us >= q.sinceUs && us <= q.untilUs;
  };
  const kept = stored.events.filter((e) => q.sources.has(e.source) && inWindow(e) && (!q.pods || podMatches(q.pods, e.pod)));
  const cut = kept.length > q.limit;
  const events = cut ? kept.slice(kept.length - q.limit) : kept;
  const sources: Timeline['sources'] = {};
  for (const [name, s] of Object.entries(stored.sources)) if (q.sources.has(name as TimelineSource)) sources[name as TimelineSource] = s;
  const asked = (name: string) => q.sources.has(name as TimelineSource);
  const warnings = [
    `replayed from a capture taken at ${stored.observedAt}: it holds ${stored.since} to ${stored.until}${stored.truncated ? `, only the newest ${stored.limit} events of it` : ''}`,
    // a stored warning names its source first ("kernel: ..."); other sources' are left out
    ...stored.warnings.filter((w) => !/^[a-z]+: /.test(w) || asked(w.slice(0, w.indexOf(':')))),
  ];
  if (q.sinceUs < storedSince) warnings.push(`the capture holds nothing before ${stored.since}`);
  if (q.untilUs > storedUntil) warnings.push(`the capture holds nothing after ${stored.until}`);
  if (q.verbose && !stored.verbose) warnings.push('the capture holds the notable journal records only (it was not verbose)');
  return {
    observedAt: stored.observedAt,
    since: formatMicros(Math.max(q.sinceUs, storedSince)),
    until: formatMicros(Math.min(q.untilUs, storedUntil)),
    limit: q.limit,
    verbose: q.verbose,
    clock: stored.clock,
    events,
    truncated: cut || stored.truncated,
    sources,
    warnings,
  };
}
