/**
 * The bundle commands:
 *   nodetruth capture [source flags] [-o FILE] [--since 1h] [--max-size 64MiB]
 *   nodetruth serve --bundle FILE [--max-size 128MiB] [serve flags]
 * Their own flags are parsed with the shared ones (loadConfig's `extra`), so the
 * source flags are exactly those of `serve`.
 */
import { createWriteStream, unlinkSync } from 'node:fs';
import pino from 'pino';
import { createLogger } from '../agent.js';
import { closeSources, createSources } from '../sources.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { buildApp } from '../server/app.js';
import { listenOnAll, type Listening } from '../server/serve-addresses.js';
import { EXIT_CODES, renderText } from '../triage/report.js';
import { redactText } from '../redact.js';
import { escapeTerminal } from '../format.js';
import { parseFlags } from '../args.js';
import { durationWithin } from '../validate.js';
import { captureBundle, type CaptureFigures } from './capture.js';
import { DEFAULT_MAX_BYTES, DEFAULT_READ_MAX_BYTES, defaultBundleName, parseSize, SINCE, SINCE_TEXT, type Manifest } from './format.js';
import { readBundle, BundleError } from './read.js';
import { LIVE_ROUTES } from './route.js';
import { bundleBanner, buildBundleApp, parseStoredTriage } from './serve.js';

const CAPTURE_USAGE = `Usage: nodetruth capture [source flags of serve] [-o FILE] [--since 1h] [--max-size 64MiB]
  -o, --output FILE  where the bundle goes (default nodetruth-<node>-<UTC time>.tar.gz; never overwritten)
  --since DURATION   kubelet and containerd journal since this long ago (default 1h, 1m..7d)
  --max-size SIZE    size budget, uncompressed (default 64MiB); sections are trimmed in the
                     order the manifest states (container log tails first, route answers last)
`;

export async function captureMain(argv: string[], io = { stderr: process.stderr as { write(s: string): unknown } }): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(CAPTURE_USAGE);
    return 0;
  }
  const { config, flags } = loadConfig(argv, process.env, { output: { type: 'string', short: 'o' }, since: { type: 'string' }, 'max-size': { type: 'string' } });
  const { output, since, 'max-size': size } = flags as Record<string, string | undefined>;
  const sinceMs = since === undefined ? 3600_000 : durationWithin(since, SINCE);
  if (sinceMs === null) throw new ConfigError(`--since: expected ${SINCE_TEXT}, got ${JSON.stringify(since)}`);
  const maxBytes = size === undefined ? DEFAULT_MAX_BYTES : parseSize(size);
  if (maxBytes === null || maxBytes < 1024 * 1024) throw new ConfigError(`--max-size: expected a size of at least 1MiB such as 64MiB, got ${JSON.stringify(size)}`);
  const file = output ?? defaultBundleName(config.nodeName);
  const log = createLogger({ logLevel: process.env.NODETRUTH_LOG_LEVEL ? config.logLevel : 'warn' }, pino.destination({ fd: 2, sync: true }));
  const shutdown = new AbortController();
  const deps = createSources(config, log);
  const app = await buildApp(deps, { shutdown: shutdown.signal, tls: null, routes: LIVE_ROUTES });
  try {
    await app.ready();
    // 'wx': an existing file is never overwritten
    const out = createWriteStream(file, { flags: 'wx', mode: 0o600 });
    const opened = new Promise<void>((resolve, reject) => out.once('open', () => resolve()).once('error', reject));
    await opened.catch((err: NodeJS.ErrnoException) => {
      throw new ConfigError(`-o: cannot create ${file}: ${err.code === 'EEXIST' ? 'it exists (a bundle is never overwritten)' : err.code}`);
    });
    const ac = new AbortController();
    const onSignal = () => ac.abort(new Error('interrupted'));
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const t0 = performance.now();
    let figures: (CaptureFigures & { uncompressedBytes: number; sections: number; trimmed: string[] }) | null = null;
    const onManifest = (m: Manifest, f: CaptureFigures) => void (figures = { ...f, uncompressedBytes: m.bytes, sections: m.sections.length, trimmed: m.trimmed });
    // the one audit line of a capture (the requests it injects have none): as a request's, with what it took
    const audit = (outcome: string) =>
      log.info({ audit: { method: null, command: 'capture', argv: ['nodetruth', 'capture', ...argv].map((a) => redactText(a).slice(0, 1024)), file, outcome, capture: figures, bytes: out.bytesWritten, durationMs: Math.round(performance.now() - t0), user: null } }, 'capture');
    try {
      const m = await captureBundle({ app, deps, sinceMs, maxBytes, argv: ['nodetruth', 'capture', ...argv], signal: ac.signal, onManifest }, out);
      audit('ok');
      const failed = m.sections.filter((s) => s.error !== undefined);
      const routes = m.sections.filter((s) => s.kind === 'route');
      io.stderr.write(
        `nodetruth capture: wrote ${file}: node ${m.node}, ${routes.length} route answers, ${m.sections.length - routes.length} raw sections, ${(m.bytes / 2 ** 20).toFixed(1)} MiB uncompressed, ${m.redaction.total} values redacted\n` +
          (m.trimmed.length ? `  trimmed to fit ${m.maxBytes} bytes: ${m.trimmed.join(', ')}\n` : '') +
          (failed.length ? `  ${failed.length} sections failed (named in manifest.json): ${failed.slice(0, 8).map((s) => `${s.kind} ${s.name}`).join('; ')}${failed.length > 8 ? ' …' : ''}\n` : ''),
      );
      return 0;
    } catch (err) {
      audit(ac.signal.aborted ? 'interrupted' : 'failed');
      try {
        unlinkSync(file); // a half-written bundle is no bundle
      } catch {
        /* already gone */
      }
      io.stderr.write(`nodetruth capture: ${(err as Error).message}; nothing written\n`);
      return 1;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  } finally {
    shutdown.abort();
    await app.close();
    closeSources(deps);
  }
}

/** The flags of `serve --bundle` and `triage --bundle`. */
const BUNDLE_FLAGS = { bundle: { type: 'string' }, 'max-size': { type: 'string' } } as const;

/** `serve --bundle FILE`: read the bundle (refused with the reason when hostile), serve it until SIGTERM. */
export async function serveBundleMain(argv: string[]): Promise<void> {
  const { config, flags } = loadConfig(argv, process.env, BUNDLE_FLAGS);
  const { bundle: file, 'max-size': size } = flags as Record<string, string | undefined>;
  if (file === undefined) throw new ConfigError('--bundle: which bundle? --bundle FILE');
  const maxBytes = size === undefined ? DEFAULT_READ_MAX_BYTES : parseSize(size);
  if (maxBytes === null) throw new ConfigError(`--max-size: expected a size such as 128MiB, got ${JSON.stringify(size)}`);
  let bundle;
  try {
    bundle = await readBundle(file, { maxBytes });
  } catch (err) {
    if (err instanceof BundleError) throw new ConfigError(`--bundle: ${err.message}`);
    throw err;
  }
  // no source of this machine is read: no CRI client is made
  const cfg: Config = { ...config, criEndpoint: null };
  const log = createLogger(cfg);
  const shutdown = new AbortController();
  const deps = { ...createSources(cfg, log), shutdown: shutdown.signal };
  const app = await buildBundleApp(bundle, deps);
  let listening: Listening | null = null;
  const stop = async () => {
    shutdown.abort();
    const t = setTimeout(() => process.exit(0), 4000);
    t.unref();
    // the further addresses stop accepting first; the app's close ends their sockets with its own
    const extraClosed = listening?.close();
    await app.close();
    await extraClosed;
    closeSources(deps);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
  // every --listen address, as `serve` does
  listening = await listenOnAll(app, cfg.listenAddresses, cfg.maxConnections);
  const listen = listening.addresses.map((a) => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`));
  log.info({ bundle: file, node: bundle.manifest.node, capturedAt: bundle.manifest.capturedAt, listen }, bundleBanner(bundle));
}

/**
 * `nodetruth triage --bundle FILE [--json]`: the report from the bundle's STORED
 * /v1/triage answer (not re-run: the rules would need the live sources, and the
 * stored answer is what the agent said at capture time). Same exit codes as triage.
 */
export async function triageBundleMain(argv: string[], io: { stdout: { write(s: string): unknown; isTTY?: boolean }; stderr: { write(s: string): unknown }; env: NodeJS.ProcessEnv } = { stdout: process.stdout, stderr: process.stderr, env: process.env }): Promise<number> {
  const USAGE_EXIT = 3;
  let file: string;
  let json = false;
  let maxBytes = DEFAULT_READ_MAX_BYTES;
  try {
    const { values, positionals } = parseFlags(argv, { ...BUNDLE_FLAGS, json: { type: 'boolean' } }, (m) => new ConfigError(`${m}; with --bundle only --json and --max-size apply`));
    if (positionals.length) throw new ConfigError(`with --bundle only --json and --max-size apply, got ${positionals.join(' ')}`);
    if (values.bundle === undefined) throw new ConfigError('--bundle: which bundle? --bundle FILE');
    file = values.bundle;
    json = values.json === true;
    if (values['max-size'] !== undefined) maxBytes = parseSize(values['max-size']) ?? NaN;
    if (Number.isNaN(maxBytes)) throw new ConfigError(`--max-size: expected a size such as 128MiB`);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.stderr.write(`nodetruth triage: ${err.message}\n`);
    return USAGE_EXIT;
  }
  let bundle;
  try {
    bundle = await readBundle(file, { maxBytes });
  } catch (err) {
    if (!(err instanceof BundleError)) throw err;
    io.stderr.write(`nodetruth triage: --bundle: ${err.message}\n`);
    return USAGE_EXIT;
  }
  const stored = bundle.routes.get('/v1/triage');
  if (!stored || stored.status !== 200) {
    io.stderr.write(`nodetruth triage: the bundle holds no triage report${stored ? ` (the agent answered ${stored.status})` : ''}\n`);
    return USAGE_EXIT;
  }
  // a bundle is untrusted input: a stored report that is not one is refused with the reason, never thrown
  const parsed = parseStoredTriage(stored.body);
  if ('reason' in parsed) {
    io.stderr.write(`nodetruth triage: --bundle: refused: ${parsed.reason}\n`);
    return USAGE_EXIT;
  }
  const report = parsed.report;
  io.stderr.write(`nodetruth triage: ${bundleBanner(bundle)}; the report is the stored /v1/triage answer, not re-run\n`);
  if (json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else {
    // the stored text answer is the report exactly as the agent rendered it; colour needs a re-render
    const color = Boolean(io.stdout.isTTY) && !io.env.NO_COLOR;
    const text = bundle.routes.get('/v1/triage?format=text');
    // the stored text comes from the bundle, not from this renderer: every control character in it is shown, not obeyed
    io.stdout.write(!color && text?.status === 200 ? escapeTerminal(text.body.toString('utf8'), { keepNewlines: true }) : renderText(report, { color }));
  }
  return EXIT_CODES[report.verdict] ?? USAGE_EXIT;
}
