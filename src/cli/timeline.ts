/**
 * `nodetruth timeline [flags] [--since 15m] [--until T] [--pod ns/name|UID ...] [--source S ...]
 * [--limit N] [--verbose] [--json]`: GET /v1/timeline's answer in the terminal, from the same
 * source flags as `serve` and the same parameter schema as the route. Exit 0 when it ran,
 * 3 when it could not (bad flags), as `triage`.
 */
import pino from 'pino';
import { createLogger } from '../agent.js';
import { deadlines } from '../deadlines.js';
import { ConfigError, loadConfig } from '../config.js';
import { timelineParams, timelineQuery, timelineText } from '../server/routes/timeline.js';
import { closeSources, createSources } from '../sources.js';
import { readTimeline } from '../view/timeline/index.js';

export const TIMELINE_USAGE_EXIT = 3;

export interface TimelineIo {
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
} as const;

export async function timelineMain(args: string[], io: TimelineIo = { stdout: process.stdout, stderr: process.stderr, env: process.env }): Promise<number> {
  let parsed;
  try {
    const { config, flags } = loadConfig(args, io.env, FLAGS);
    const f = flags as Record<string, string | boolean | string[] | undefined>;
    const q = timelineParams.safeParse({
      since: f.since,
      until: f.until,
      pod: f.pod,
      source: f.source,
      limit: f.limit,
      verbose: f.verbose ? 'true' : undefined,
    });
    if (!q.success) throw new ConfigError(q.error.issues.map((i) => `--${String(i.path[0] ?? '')}: ${i.message}`).join('\n'));
    parsed = { config, json: f.json === true, query: timelineQuery(q.data) };
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
