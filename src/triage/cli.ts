/**
 * `nodetruth triage [flags] [--json] [--window 2s]`: one snapshot of the node,
 * the findings on stdout (text for a terminal, or JSON), and an exit code a
 * script can act on: 0 ok, 1 warnings, 2 critical findings, 3 triage could not
 * run (bad flags). Takes the same source flags as `serve`; logs go to stderr.
 */
import pino from 'pino';
import { createLogger } from '../agent.js';
import { ConfigError, loadConfig } from '../config.js';
import { closeSources, createSources } from '../sources.js';
import { durationWithin, rangeText, TRIAGE_WINDOW } from '../validate.js';
import { EXIT_CODES, renderText, triage } from './report.js';
import { triageSources } from './sources.js';
import { THRESHOLDS } from '../rules/thresholds.js';

const TRIAGE_USAGE_EXIT = 3;

interface TriageIo {
  stdout: { write(s: string): unknown; isTTY?: boolean };
  stderr: { write(s: string): unknown };
  env: NodeJS.ProcessEnv;
}

export async function triageMain(args: string[], io: TriageIo = { stdout: process.stdout, stderr: process.stderr, env: process.env }): Promise<number> {
  let parsed;
  try {
    const { config, flags } = loadConfig(args, io.env, { json: { type: 'boolean' }, window: { type: 'string' } });
    const window = flags.window as string | undefined;
    const windowMs = window === undefined ? THRESHOLDS.defaultWindowMs : durationWithin(window, TRIAGE_WINDOW);
    if (windowMs === null) throw new ConfigError(`--window: expected a duration ${rangeText(TRIAGE_WINDOW)}, got ${JSON.stringify(window)}`);
    parsed = { config, json: flags.json === true, windowMs };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.stderr.write(`nodetruth triage: ${err.message}\n`);
    return TRIAGE_USAGE_EXIT;
  }
  const { config, json, windowMs } = parsed;
  // the report is stdout's; the agent's own log (warnings only by default) goes to stderr
  const log = createLogger({ logLevel: io.env.NODETRUTH_LOG_LEVEL ? config.logLevel : 'warn' }, pino.destination({ fd: 2, sync: true }));
  const sources = createSources(config, log);
  try {
    const report = await triage(triageSources(sources), { windowMs });
    if (json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else io.stdout.write(renderText(report, { color: Boolean(io.stdout.isTTY) && !io.env.NO_COLOR }));
    return EXIT_CODES[report.verdict];
  } finally {
    closeSources(sources);
  }
}
