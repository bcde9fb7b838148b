import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { deadlines } from '../../deadlines.js';
import { Reading } from '../../reading.js';
import { escapeTerminal, parseDuration, shortId } from '../../format.js';
import { TIMELINE_SOURCES, type Timeline, type TimelineEvent, type TimelineSource } from '../../model/timeline.js';
import type { Evidence } from '../../model/triage.js';
import { formatMicros, parseRfc3339Micros } from '../../readers/journal/time.js';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN } from '../../validate.js';
import { FOLLOW_TIMING, followTimeline } from '../../view/timeline/follow.js';
import { readTimeline } from '../../view/timeline/index.js';
import { TIMELINE_LIMITS, type TimelineQuery } from '../../view/timeline/window.js';
import type { AppDeps } from '../app.js';
import { followLimiter, sendFollow } from '../follow.js';
import { requestSignal } from '../request-signal.js';
import { renderTable } from '../table.js';
import { integer, query, repeated } from '../schemas.js';

/** A duration back from now reaches at most this far. */
const MAX_BACK_MS = 366 * 86_400_000;
const TIME_TEXT = 'an RFC 3339 time (2026-11-29T17:42:28Z) or a duration back from now (15m, 1h30m, 7d)';

/** A time, absolute or back from now: µs since the epoch, checked at validation. */
const timeParam = z
  .string()
  .max(64)
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return undefined;
    const us = parseRfc3339Micros(s);
    if (us !== null) return us;
    const ms = parseDuration(s);
    if (ms !== null && ms <= MAX_BACK_MS) return (Date.now() - ms) * 1000;
    ctx.addIssue({ code: 'custom', message: `expected ${TIME_TEXT}, got ${JSON.stringify(s.slice(0, 64))}` });
    return z.NEVER;
  });

const POD_UID = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;
const podRef = z
  .string()
  .max(320)
  .refine((s) => {
    if (POD_UID.test(s)) return true;
    const i = s.indexOf('/');
    return i > 0 && DNS1123_LABEL.test(s.slice(0, i)) && s.length - i - 1 <= 253 && DNS1123_SUBDOMAIN.test(s.slice(i + 1));
  }, 'expected namespace/name or a pod UID');

const sourceName = z.string().max(16).refine((s) => (TIMELINE_SOURCES as readonly string[]).includes(s), `expected one of ${TIMELINE_SOURCES.join(', ')}`);

const bool = z
  .enum(['true', 'false', '1', '0', ''])
  .transform((s) => s === 'true' || s === '1' || s === '')
  .optional();

/** Without `source`: every source; kube where the API server is configured (`sources` says why not otherwise). */
const DEFAULT_SOURCES: readonly TimelineSource[] = TIMELINE_SOURCES;

/** The parameters of GET /v1/timeline, and of `nodetruth timeline` (its flags go through the same schema). */
const timelineParams = query({
  since: timeParam.describe(`the window's start: ${TIME_TEXT}; default an hour before until`),
  until: timeParam.describe(`the window's end: ${TIME_TEXT}; default now`),
  pod: repeated(podRef, 16).optional().describe('namespace/name or pod UID (repeatable): only that pod\'s events'),
  source: repeated(sourceName, TIMELINE_SOURCES.length).optional().describe(`${TIMELINE_SOURCES.join(', ')} (repeatable); default all (kube where the API server is configured)`),
  limit: integer(1, TIMELINE_LIMITS.maxLimit).describe(`the newest events answered (default ${TIMELINE_LIMITS.defaultLimit})`),
  verbose: bool.describe('every journal record of kubelet and the runtime, and the evidence in the text form'),
  follow: bool.describe(`stream the window's events, then new ones as they happen (polled every ${FOLLOW_TIMING.intervalMs / 1000}s), NDJSON or SSE`),
})
  .refine((q) => (q.since ?? 0) <= (q.until ?? Date.now() * 1000), { path: ['since'], message: 'since must not be after until' })
  .refine((q) => !(q.follow && q.until !== undefined), { path: ['until'], message: 'cannot follow up to a time' });

/** Validated parameters → the view's query. */
function timelineQuery(q: z.output<typeof timelineParams>, nowUs = Date.now() * 1000): TimelineQuery {
  const untilUs = q.until ?? nowUs;
  const sinceUs = q.since ?? untilUs - TIMELINE_LIMITS.defaultWindowMs * 1000;
  const pods = q.pod ? { uids: new Set(q.pod.filter((p) => !p.includes('/'))), names: new Set(q.pod.filter((p) => p.includes('/'))) } : null;
  return { sinceUs, untilUs, pods, sources: new Set(q.source ? (q.source as TimelineSource[]) : DEFAULT_SOURCES), explicitSources: q.source !== undefined, limit: q.limit ?? TIMELINE_LIMITS.defaultLimit, verbose: Boolean(q.verbose), nowUs };
}

/**
 * The parameters as given (strings, or arrays of them), counted from `nowUs`: durations go
 * back from it (a capture's end, when a stored timeline is replayed). Each issue names its
 * parameter.
 */
export function timelineQueryAt(raw: Record<string, unknown>, nowUs: number): { query: TimelineQuery } | { issues: { param: string; message: string }[] } {
  const back = (v: unknown) => {
    if (typeof v !== 'string' || parseRfc3339Micros(v) !== null) return v;
    const ms = parseDuration(v);
    return ms === null || ms > MAX_BACK_MS ? v : formatMicros(nowUs - ms * 1000);
  };
  const q = timelineParams.safeParse({ ...raw, since: back(raw.since), until: back(raw.until) });
  if (!q.success) return { issues: q.error.issues.map((i) => ({ param: String(i.path[0] ?? ''), message: i.message })) };
  return { query: timelineQuery(q.data, nowUs) };
}

export const timelineRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  app.get(
    '/v1/timeline',
    {
      schema: {
        summary: 'What happened on the node, oldest first: container attempts, OOM kills, kernel problems, kubelet and runtime journal records and unit starts/stops, Kubernetes Events of the node and its pods, in one clock',
        description: `Each event \`{time, source, kind, severity, pod, container, summary, evidence[]}\`. The newest \`limit\` events of the window are answered; \`truncated\` says when the window held more. A source that fails or misses its deadline is named in \`warnings\` and \`sources\`; the rest stands. Kernel records are timed with the boot time in \`clock\`.`,
        querystring: timelineParams,
      },
      config: { table: (b: Timeline) => timelineText(b) },
    },
    async (req, reply) => {
      const q = timelineQuery(req.query);
      if (!req.query.follow) return readTimeline(deps, q, { deadlines: deadlines(deps.config), observedAt: Reading.current()?.startedAt, signal: requestSignal(req) });
      const release = followLimiter(deps).acquire();
      return sendFollow(req, reply, deps, (signal) => followFrames(deps, q, signal), release, (v) => ('warning' in v ? 'warning' : 'record'));
    },
  );
};

/** Follow frames: each event as it is, a warning as `{warning}`. */
async function* followFrames(deps: AppDeps, q: TimelineQuery, signal: AbortSignal): AsyncGenerator<TimelineEvent | { warning: string }> {
  for await (const item of followTimeline(deps, q, { deadlines: deadlines(deps.config), signal })) yield item.kind === 'event' ? item.event : { warning: item.warning };
}

const evidenceText = (e: Evidence): string =>
  `${e.source}${e.seq !== undefined ? ` seq=${e.seq}` : ''}${e.cursor ? ` cursor=${e.cursor}` : ''}${e.call ? ` ${e.call}` : ''}: ${e.excerpt}`;

/** One aligned line per event (TIME SOURCE POD CONTAINER WHAT); evidence under it with verbose. Every cell escaped for a terminal. */
export function timelineText(b: Timeline): string {
  const rows: (string | null)[][] = [];
  for (const e of b.events) {
    const pod = e.pod ? (e.pod.name ? `${e.pod.namespace}/${e.pod.name}` : (e.pod.uid ?? '')) : '';
    const ctr = e.container ? (e.container.name ?? shortId(e.container.id)) : '';
    rows.push([e.time, e.source, pod, ctr, `${e.kind}: ${e.summary}`]);
    if (b.verbose) for (const ev of e.evidence) rows.push(['', '', '', '', `  ↳ ${evidenceText(ev)}`]);
  }
  const notes = [
    ...(b.truncated ? [`# truncated: the newest ${b.limit} events of the window`] : []),
    ...b.warnings.map((w) => `# warning: ${escapeTerminal(w)}`),
  ];
  return renderTable({ columns: ['TIME', 'SOURCE', 'POD', 'CONTAINER', 'WHAT'], rows }) + notes.map((n) => `${n}\n`).join('');
}
