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
 * One reading (src/reading.ts): the whole capture runs inside a reading of its own, so the
 * ~10 answers per container share one ListContainers + ListPodSandbox, one walk of the
 * kubepods cgroups, the list rows' statuses (view/runtime-view.ts) and one cgroup mode check, and the
 * raw CRI lists and cgroup files are those same reads. The cost is linear in the node; the
 * reads are made between capturedAt and finishedAt (the manifest says so), and every answer's
 * observedAt is capturedAt. The answers are still the routes' own (app.inject).
 * The injected requests are not audited one by one (plugins/audit.ts): the
 * capture's request or command writes one line, with `onManifest`'s figures.
 *
 * Files: routes.ts (answers), raw.ts and journal.ts (raw evidence), writer.ts (the
 * budget, section records), manifest.ts.
 *
 * A failed section never fails the capture: its error goes into the manifest.
 * Nothing here changes the node: reads only, journalctl with an argument array.
 *
 * Ending: every stream of the archive (the pack, each entry, the gzip) has an error
 * listener, so an output that fails (a client gone mid-entry, a full disk) stops the
 * capture and rejects it, and never reaches the process as an unhandled 'error'. A
 * capture has an overall deadline (--capture-timeout): when it passes, the sections
 * still running are stopped, what was written stays, and the archive ends with a
 * manifest that says so (`incomplete`); if even that cannot be written within
 * FINISH_GRACE_MS (an output that takes no bytes), the archive is cut unfinished, so a
 * capture never outlives its deadline by more than that grace.
 */
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { pack as tarPack } from 'tar-stream';
import type { Sources } from '../sources.js';
import { formatDuration } from '../format.js';
import { Reading } from '../reading.js';
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
  /** headers every injected request carries: the caller's Authorization, Host and attach session token (GET /v1/bundle); never stored */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** lines of each container's log route answer (default 100) */
  logTailLines?: number;
  /** the throttling sample's window (default 1s) */
  throttlingWindow?: string;
  /** called once the sections are known, before the manifest is written: for the one audit line of the capture */
  onManifest?: (m: Manifest, inner: CaptureFigures) => void;
  /** the capture's overall deadline in ms (default --capture-timeout of deps.config) */
  deadlineMs?: number;
}

/** After the deadline, the time left to write the manifest and end the archive before it is cut unfinished. */
const FINISH_GRACE_MS = 30_000;

const noop = () => {};

/** What one capture did, for its audit line. */
export interface CaptureFigures {
  /** requests injected and answered inside the capture's reading (not audited one by one) */
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
  const deadlineMs = o.deadlineMs ?? o.deps.config.captureTimeout;
  const pack = tarPack();
  const gzip = createGzip({ level: 6 });
  // the pipeline's failure is read from `done`; these keep a late 'error' of a destroyed stream from being unhandled
  pack.on('error', noop);
  gzip.on('error', noop);
  const done = pipeline(pack, gzip, out);
  // why the sections stop: the caller's signal, the output failing, the deadline
  const stop = new AbortController();
  let outputError: Error | null = null;
  done.catch((err: Error) => {
    outputError = err;
    stop.abort(err);
  });
  const onCaller = () => stop.abort(o.signal?.reason instanceof Error ? o.signal.reason : new Error('capture aborted'));
  if (o.signal?.aborted) onCaller();
  else o.signal?.addEventListener('abort', onCaller, { once: true });
  let deadlineHit = false;
  const deadlineText = `the capture deadline (--capture-timeout ${formatDuration(deadlineMs)}) passed`;
  const deadline = setTimeout(() => {
    deadlineHit = !stop.signal.aborted;
    stop.abort(new Error(`${deadlineText}; this section was not finished`));
  }, deadlineMs);
  let cut: NodeJS.Timeout | null = null;
  const stopped = new Promise<void>((resolve) => stop.signal.addEventListener('abort', () => resolve(), { once: true }));

  const w = new BundleWriter(pack, maxBytes, Math.min(CAPTURE_LIMITS.manifestReserve, Math.floor(maxBytes / 8)));
  const sections: Section[] = [];
  const ctx: CaptureContext = { o, w, sections, signal: stop.signal };

  const reading = new Reading(true);
  const capturedAt = reading.startedAt;
  let finishedAt: Date | null = null;
  try {
    try {
      const work = reading.run(async () => {
        const found = await captureRoutes(ctx);
        await captureCri(ctx);
        await captureKmsg(ctx);
        await captureCgroups(ctx);
        await captureJournal(ctx, sinceMs);
        await capturePodLogs(ctx, found.logs);
      });
      work.catch(noop); // a section still running when the capture stopped ends on the signal, unawaited
      // the sections end, or the capture stops without waiting for one that does not heed its signal
      await Promise.race([work, stopped]);
    } catch (err) {
      if (!stop.signal.aborted) throw err;
    } finally {
      reading.release();
      finishedAt = new Date();
    }

    if (stop.signal.aborted && !deadlineHit) {
      pack.destroy(outputError ?? new Error('capture aborted'));
      await done.catch(noop);
      throw outputError ?? stop.signal.reason;
    }
    if (deadlineHit) {
      // what was written stays; nothing more is, but the manifest
      w.seal(new Error(`${deadlineText}; this section was not stored`));
      for (const s of sections) if (s.path === undefined && s.error === undefined && s.trimmed === undefined) s.error = `${deadlineText}; this section was not finished`;
      cut = setTimeout(() => pack.destroy(new Error(`${deadlineText} and the archive could not be finished within ${formatDuration(FINISH_GRACE_MS)}; it was cut`)), FINISH_GRACE_MS);
      await w.settled();
    }
    const manifest = buildManifest({
      config: o.deps.config,
      argv: o.argv ?? [],
      capturedAt,
      finishedAt: finishedAt ?? new Date(),
      sinceMs,
      maxBytes,
      bytes: w.used,
      trimmed: w.trimmed,
      // a copy: work stopped by the deadline may still touch its section
      sections: structuredClone(sections),
    });
    if (deadlineHit) manifest.incomplete = { reason: 'deadline', detail: `${deadlineText}: the sections not finished by then are missing or marked with an error; everything stored is complete` };
    const routes = manifest.sections.filter((s) => s.kind === 'route');
    o.onManifest?.(manifest, { answers: reading.requests, answerBytes: routes.reduce((n, s) => n + s.bytes, 0), failedSections: manifest.sections.filter((s) => s.error !== undefined).length });
    await w.add('manifest', MANIFEST_NAME, Buffer.from(`${JSON.stringify(manifest, null, 1)}\n`));
    pack.finalize();
    await done;
    return manifest;
  } catch (err) {
    pack.destroy(err instanceof Error ? err : new Error(String(err)));
    await done.catch(noop);
    throw err;
  } finally {
    clearTimeout(deadline);
    if (cut) clearTimeout(cut);
    o.signal?.removeEventListener('abort', onCaller);
  }
}
