/**
 * `nodetruth capture` and GET /v1/bundle: the node, written as a streamed tar.gz.
 *
 * Route answers are taken THROUGH THE APP ITSELF: every read route /openapi.json
 * lists that needs no id (and, for each pod and container, the routes that take
 * one) is called with app.inject(), and its status, content type and body are
 * stored exactly as the API gave them. So a bundle holds what a client would have
 * seen, redaction included, and `serve --bundle` can give it back byte for byte.
 *
 * The raw evidence behind the answers is read with the agent's own sources
 * (cgroup files through HostFs, the CRI client, the kmsg reader, journalctl as
 * JournalSource resolves it, container log files within /var/log) and passes
 * through src/redact.ts like every answer; `<redacted` markers are counted per
 * section for the manifest.
 *
 * Streaming: entries go one at a time into tar-stream's pack, whose entry
 * callback waits for the gzip and the output to take the bytes (backpressure), so
 * the bundle is never held in memory: at most a few route answers and one raw
 * section (each bounded) are. Budget: bytes are counted as they are written
 * (uncompressed, headers included); an entry that does not fit the room left is
 * skipped and its section marked trimmed. Sections are written in SECTION_KINDS
 * order, so the last ones (container log tails, then the journal, then cgroup
 * files) are the first to lose room, and route answers the last.
 *
 * One moment (util/moment.ts): the whole capture runs inside a Moment, so the
 * ~10 answers per container share one ListContainers + ListPodSandbox, one walk of
 * the kubepods cgroups, one ContainerStatus per container and one cgroup mode
 * check, and the raw CRI lists and cgroup files are those same reads. The cost is
 * linear in the node; the manifest says the bundle is one moment, taken between
 * capturedAt and finishedAt. The answers are still the routes' own (app.inject).
 * The injected requests are not audited one by one (plugins/audit.ts): the
 * capture's request or command writes one line, with `onManifest`'s figures.
 *
 * Files: routes.ts (answers), raw.ts and journal.ts (raw evidence), writer.ts (the
 * budget, section records), manifest.ts.
 *
 * A failed section never fails the capture: its error goes into the manifest.
 * Nothing here changes the node: reads only, journalctl with an argument array.
 */
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { pack as tarPack } from 'tar-stream';
import type { Sources } from '../sources/index.js';
import { Moment } from '../util/moment.js';
import { DEFAULT_MAX_BYTES, MANIFEST_NAME, type Manifest, type Section } from './format.js';
import { captureJournal } from './journal.js';
import { buildManifest } from './manifest.js';
import { captureCgroups, captureCri, captureKmsg, capturePodLogs } from './raw.js';
import { captureRoutes } from './routes.js';
import { BundleWriter, CAPTURE_LIMITS, type CaptureContext } from './writer.js';

export interface CaptureOptions {
  /** the real app over `deps` (buildApp), ready */
  app: FastifyInstance;
  deps: Sources;
  /** journal since this many ms ago (--since, default 1h) */
  sinceMs?: number;
  /** --max-size: uncompressed archive bytes */
  maxBytes?: number;
  /** the command line, for the manifest */
  argv?: string[];
  /** headers every injected request carries: the caller's Authorization and Host (GET /v1/bundle) */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** lines of each container's log route answer (default 100) */
  logTailLines?: number;
  /** the throttling sample's window (default 1s) */
  throttlingWindow?: string;
  /** called once the sections are known, before the manifest is written: for the one audit line of the capture */
  onManifest?: (m: Manifest, inner: CaptureFigures) => void;
}

/** What one capture did, for its audit line. */
export interface CaptureFigures {
  /** requests injected and answered inside the capture's moment (not audited one by one) */
  answers: number;
  /** bytes of the route answers stored */
  answerBytes: number;
  /** sections that failed */
  failedSections: number;
}

/** Capture the node into `out` (a file, an HTTP response). Resolves with the manifest once everything is written. */
export async function captureBundle(o: CaptureOptions, out: Writable): Promise<Manifest> {
  const maxBytes = o.maxBytes ?? DEFAULT_MAX_BYTES;
  const sinceMs = o.sinceMs ?? 3600_000;
  const capturedAt = new Date();
  const pack = tarPack();
  const done = pipeline(pack, createGzip({ level: 6 }), out);
  done.catch(() => {}); // awaited below; an output error also rejects the entry callbacks
  const w = new BundleWriter(pack, maxBytes, Math.min(CAPTURE_LIMITS.manifestReserve, Math.floor(maxBytes / 8)));
  const sections: Section[] = [];
  const ctx: CaptureContext = { o, w, sections, signal: o.signal };

  const moment = new Moment();
  try {
    await moment.run(async () => {
      const found = await captureRoutes(ctx);
      await captureCri(ctx);
      await captureKmsg(ctx);
      await captureCgroups(ctx);
      await captureJournal(ctx, sinceMs);
      await capturePodLogs(ctx, found.logs);
    });
  } catch (err) {
    if (!o.signal?.aborted) throw err;
  } finally {
    moment.end();
  }

  const manifest = buildManifest({
    config: o.deps.config,
    argv: o.argv ?? [],
    capturedAt,
    finishedAt: moment.to ?? new Date(),
    sinceMs,
    maxBytes,
    bytes: w.used,
    trimmed: w.trimmed,
    sections,
  });
  if (o.signal?.aborted) {
    pack.destroy(new Error('capture aborted'));
    await done.catch(() => {});
    throw o.signal.reason instanceof Error ? o.signal.reason : new Error('capture aborted');
  }
  const routes = sections.filter((s) => s.kind === 'route');
  o.onManifest?.(manifest, { answers: moment.requests, answerBytes: routes.reduce((n, s) => n + s.bytes, 0), failedSections: sections.filter((s) => s.error !== undefined).length });
  await w.add('manifest', MANIFEST_NAME, Buffer.from(`${JSON.stringify(manifest, null, 1)}\n`));
  pack.finalize();
  await done;
  return manifest;
}
