/**
 * `nodetruth timeline [flags] [--since 15m] [--until T] [--pod ns/name|UID ...] [--source S ...]
 * [--limit N] [--verbose] [--json] [--bundle FILE [--max-size 128MiB]]`: GET /v1/timeline's
 * answer in the terminal, from the same source flags as `serve` and the same parameter schema
 * as the route; with --bundle, the capture's stored timeline narrowed by the same parameters
 * (durations count back from the end of the captured window). Exit 0 when it ran, 3 when it could not
 * (bad flags, a bundle refused or without a timeline), as `triage`.
 */
import pino from 'pino';
import { createLogger } from '../agent.js';
import { BundleError, readBundle } from '../bundle/read.js';
import { DEFAULT_READ_MAX_BYTES, parseSize } from '../bundle/format.js';
import { escapeTerminal } from '../format.js';
import { parseRfc3339Micros } from '../readers/journal/time.js';
import { parseStoredTimeline, replayTimeline } from '../view/timeline/replay.js';
import { deadlines } from '../deadlines.js';
import { ConfigError, loadConfig } from '../config.js';
import { timelineQueryAt, timelineText } from '../server/routes/timeline.js';
import { closeSources, createSources } from '../sources.js';
import { readTimeline } from '../view/timeline/index.js';

export const TIMELINE_USAGE_EXIT = 3;

interface TimelineIo {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  env: NodeJS.ProcessEnv;
}

const FLAGS = {
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  pod: { type: 'string', multiple: true },
  source: { type: 'string', multiple: true },
  bundle: { type: 'string' },
  'max-size': { type: 'string' },
} as const;

type Flags = Record<string, string | boolean | string[] | undefined>;

/** The route's parameters from the flags; with `nowUs`, durations count back from it (a capture's end). */
function queryOf(f: Flags, nowUs?: number) {
  const raw = { since: f.since, until: f.until, pod: f.pod, source: f.source, limit: f.limit, verbose: f.verbose ? 'true' : undefined };
  const r = timelineQueryAt(raw, nowUs ?? Date.now() * 1000);
  if ('issues' in r) throw new ConfigError(r.issues.map((i) => `--${i.param}: ${i.message}`).join('\n'));
  return r.query;
}

export async function timelineMain(args: string[], io: TimelineIo = { stdout: process.stdout, stderr: process.stderr, env: process.env }): Promise<number> {
  let parsed;
  try {
    const { config, flags } = loadConfig(args, io.env, FLAGS);
    const f = flags as Flags;
    if (typeof f.bundle === 'string') return await replayMain(f, io);
    if (f['max-size'] !== undefined) throw new ConfigError('--max-size: only with --bundle');
    parsed = { config, json: f.json === true, query: queryOf(f) };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.stderr.write(`nodetruth timeline: ${err.message}\n`);
    return TIMELINE_USAGE_EXIT;
  }
  const log = createLogger({ logLevel: io.env.NODETRUTH_LOG_LEVEL ? parsed.config.logLevel : 'warn' }, pino.destination({ fd: 2, sync: true }));
  const sources = createSources(parsed.config, log);
  try {
    const t = await readTimeline(sources, parsed.query, { deadlines: deadlines(parsed.config) });
    io.stdout.write(parsed.json ? `${JSON.stringify(t, null, 2)}\n` : timelineText(t));
    return 0;
  } finally {
    closeSources(sources);
  }
}

/** --bundle: the capture's stored timeline, narrowed; nothing of this machine is read. */
async function replayMain(f: Flags, io: TimelineIo): Promise<number> {
  const maxBytes = f['max-size'] === undefined ? DEFAULT_READ_MAX_BYTES : parseSize(String(f['max-size']));
  if (maxBytes === null || Number.isNaN(maxBytes)) throw new ConfigError('--max-size: expected a size such as 128MiB');
  let bundle;
  try {
    bundle = await readBundle(String(f.bundle), { maxBytes });
  } catch (err) {
    if (err instanceof BundleError) throw new ConfigError(`--bundle: ${err.message}`);
    throw err;
  }
  const stored = bundle.routes.get('/v1/timeline');
  if (!stored || stored.status !== 200) throw new ConfigError(`--bundle: the bundle holds no timeline${stored ? ` (the agent answered ${stored.status})` : ''}`);
  // a bundle is untrusted input: a stored answer that is not a timeline is refused with the reason
  const parsed = parseStoredTimeline(stored.body.toString('utf8'));
  if ('reason' in parsed) throw new ConfigError(`--bundle: refused: ${parsed.reason}`);
  const t = replayTimeline(parsed.timeline, queryOf(f, parseRfc3339Micros(parsed.timeline.until)!));
  const m = bundle.manifest;
  io.stderr.write(`nodetruth timeline: ${escapeTerminal(`a BUNDLE, not a live node: node ${m.node} captured at ${m.capturedAt} by nodetruth ${m.version}`).slice(0, 2000)}; the stored /v1/timeline answer, narrowed\n`);
  io.stdout.write(f.json === true ? `${JSON.stringify(t, null, 2)}\n` : timelineText(t));
  return 0;
}
