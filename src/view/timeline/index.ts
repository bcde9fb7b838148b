/**
 * One timeline of every layer of the node (DESIGN.md, GET /v1/timeline): each source asked
 * turns what it already reads into events within its own deadline (deadlines.ts), bounded to
 * the newest `limit` of the window; the lists are merged oldest first. A source that fails or
 * misses its deadline is a warning and the rest stands.
 */
import { withinDeadline } from '../../lib/deadline.js';
import type { Timeline, TimelineSource } from '../../model/timeline.js';
import { journalQuery } from '../../readers/journal/query.js';
import { formatMicros } from '../../readers/journal/time.js';
import type { HostFs } from '../../readers/hostfs/hostfs.js';
import type { JournalSource } from '../../readers/journal/journalctl.js';
import type { KmsgReader } from '../../readers/kmsg/reader.js';
import { KernelProblemsSource } from '../kernel-problems.js';
import { OomSource } from '../oom.js';
import { RuntimeNameBook, type RuntimeIndexSource } from '../runtime-index.js';
import { statusWarnings, type RuntimeView } from '../runtime-view.js';
import { journalClock, kernelClock } from './clock.js';
import { JournalEvents, JOURNAL_SCAN, MESSAGE_CHARS, TIMELINE_UNITS } from './journal.js';
import { kernelEvents, oomEvents } from './kernel.js';
import { kubeEvents, KubeNotConfigured, type KubeEventsDeps } from './kube.js';
import { mergeNewest } from './merge.js';
import { runtimeEvents } from './runtime.js';
import type { SourceEvents, Timed, TimelineQuery } from './window.js';

/** What the timeline reads: the sources' readers and views (src/sources.ts). */
export interface TimelineDeps extends KubeEventsDeps {
  hostFs: HostFs;
  /** null without a CRI socket */
  runtime: RuntimeView | null;
  index: RuntimeIndexSource;
  kmsg: KmsgReader;
  journal: JournalSource;
}

/** How long each source is waited for: rows of the deadline table (src/deadlines.ts). */
interface TimelineDeadlines {
  containerRows: number;
  kernelLog: number;
  journal: number;
  kubeEvents: number;
}

export interface TimelineOptions {
  deadlines: TimelineDeadlines;
  /** when the reading it is built from began (default now) */
  observedAt?: Date;
  signal?: AbortSignal;
}

/** The journal's clock pairing is a check, not a source: it gets little time, and without it the answer stands. */
const CLOCK_DEADLINE_MS = 2000;

interface Produced {
  events: SourceEvents;
  warnings: string[];
}

export async function readTimeline(deps: TimelineDeps, q: TimelineQuery, o: TimelineOptions): Promise<Timeline> {
  const observedAt = (o.observedAt ?? new Date()).toISOString();
  const { deadlines: d, signal } = o;
  const { bootUs, clock } = await kernelClock(deps.hostFs);
  const warnings: string[] = [];
  // the journal's own pairing of kernel and wall time, beside the sources, when kernel records are asked for
  const pairing =
    q.sources.has('kernel') || q.sources.has('oom')
      ? withinDeadline((s) => journalClock(deps.hostFs, deps.journal, bootUs, anySignal(s, signal)), CLOCK_DEADLINE_MS, 'the journal\'s clock')
      : null;
  // the runtime's names for kernel records' pod UIDs and container IDs; the last list's when it is late
  let names: Promise<RuntimeNameBook> | null = null;
  const namesOf = () => (names ??= deps.index.join().then((j) => j.names, () => RuntimeNameBook.EMPTY));

  const producers: Record<TimelineSource, { ms: number; run: (s: AbortSignal) => Promise<Produced> }> = {
    runtime: {
      ms: d.containerRows,
      run: async () => {
        if (!deps.runtime) throw new Error('no CRI socket configured or found');
        const [rows, pods] = await Promise.all([deps.runtime.containers(), deps.runtime.pods()]);
        return { events: runtimeEvents(rows, pods, q), warnings: statusWarnings(rows) };
      },
    },
    oom: {
      ms: d.kernelLog,
      run: async (s) => {
        const r = await new OomSource(deps.kmsg, deps.journal, deps.hostFs, () => bootUs).kills(s);
        return { events: oomEvents(r.kills, await namesOf(), q), warnings: r.warnings };
      },
    },
    kernel: {
      ms: d.kernelLog,
      run: async (s) => {
        const r = await new KernelProblemsSource(deps.kmsg, deps.hostFs, () => bootUs).read(s);
        return { events: kernelEvents(r.problems, await namesOf(), q), warnings: r.warnings };
      },
    },
    journal: {
      ms: d.journal,
      run: async (s) => {
        // the newest records of the window; with verbose and no pod filter every one is an event
        const tailLines = q.verbose && !q.pods ? q.limit : JOURNAL_SCAN;
        // each record made an event or let go as it is parsed: the read holds no more than the answer's events
        const j = new JournalEvents(q);
        const r = await deps.journal.scan(journalQuery({ units: [...TIMELINE_UNITS], sinceUs: q.sinceUs, untilUs: q.untilUs, tailLines, reverse: true }), s, (rec) => j.add(rec));
        const w = [...r.warnings];
        if (r.truncated) w.push(`the read was cut (${r.truncated}): older records of the window are not in the timeline`);
        else if (r.count === tailLines && tailLines === JOURNAL_SCAN) w.push(`only the newest ${JOURNAL_SCAN} records of the window were read`);
        if (j.cut > 0) w.push(`${j.cut} records longer than ${MESSAGE_CHARS} characters were cut`);
        return { events: j.events, warnings: w };
      },
    },
    kube: { ms: d.kubeEvents, run: (s) => kubeEvents(deps, q, s) },
  };

  const asked = [...q.sources];
  let dropped = false;
  const sources: Timeline['sources'] = {};
  // each source's warnings in the order asked, whichever answered first
  const answered = await Promise.all(
    asked.map(async (name): Promise<{ list: Timed[]; warnings: string[] }> => {
      const p = producers[name];
      const o = await withinDeadline((s) => p.run(anySignal(s, signal)), p.ms, name);
      if (!o.ok) {
        // a source without its configuration, not asked for by name, is skipped (said in
        // `sources`, no warning): a node without cluster access is not a failing node
        if (o.cause instanceof KubeNotConfigured && !q.explicitSources) {
          sources[name] = { ok: true, events: 0, ms: o.ms, skipped: o.error };
          return { list: [], warnings: [] };
        }
        sources[name] = { ok: false, events: 0, ms: o.ms, error: o.error };
        return { list: [], warnings: [`${name}: ${o.error}`] };
      }
      const { events: ev } = o.value;
      const list = ev.list();
      const w = o.value.warnings.map((x) => `${name}: ${x}`);
      if (ev.untimed > 0) w.push(`${name}: ${ev.untimed} records without a usable time were skipped`);
      if (ev.dropped > 0) {
        dropped = true;
        w.push(`${name}: ${ev.dropped} older events of the window left out (limit ${q.limit})`);
      }
      sources[name] = { ok: true, events: list.length, ms: o.ms };
      return { list, warnings: w };
    }),
  );
  const paired = pairing ? await pairing : null;
  if (paired?.ok && paired.value.journal) clock.journal = paired.value.journal;
  if (paired?.ok && paired.value.warning) warnings.push(`clock: ${paired.value.warning}`);
  const lists = answered.map((a) => a.list);
  for (const a of answered) warnings.push(...a.warnings);
  const { events, truncated } = mergeNewest(lists, q.limit);
  return { observedAt, since: formatMicros(q.sinceUs), until: formatMicros(q.untilUs), limit: q.limit, verbose: q.verbose, clock, events, truncated: truncated || dropped, sources, warnings };
}

/** A signal that aborts when either does. */
function anySignal(a: AbortSignal, b: AbortSignal | undefined): AbortSignal {
  return b ? AbortSignal.any([a, b]) : a;
}
