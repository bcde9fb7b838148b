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
 * A failed section never fails the capture: its error goes into the manifest.
 * Nothing here changes the node: reads only, journalctl with an argument array.
 */
import { spawn } from 'node:child_process';
import { pipeline } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { pack as tarPack, type Pack } from 'tar-stream';
import { REDACTED, redactDeep, redactText } from '../redact.js';
import type { Sources } from '../sources/index.js';
import { ExportParser } from '../sources/journal/export-parser.js';
import { Moment } from '../util/moment.js';
import { VERSION } from '../version.js';
import { countRedacted, DEFAULT_MAX_BYTES, FORMAT_VERSION, MANIFEST_NAME, routeEntryName, SECTION_KINDS, TRIM_ORDER, type Manifest, type Section, type SectionKind } from './format.js';

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

export const MOMENT_NOTE =
  'one moment: every answer and raw section was built from the same source reads (one ListContainers and ListPodSandbox, one walk of the kubepods cgroups, one ContainerStatus per container), made between capturedAt and finishedAt';

export const CAPTURE_LIMITS = {
  /** route answers fetched at once (each is bounded by the API itself) */
  concurrency: 4,
  /** bytes of one cgroup interface file */
  cgroupFileBytes: 64 * 1024,
  /** bytes of each container log file's tail */
  podLogTailBytes: 64 * 1024,
  /** the journal section: at most this many bytes (and the room left) */
  journalBytes: 16 * 1024 * 1024,
  journalDeadlineMs: 30_000,
  /** kernel records section */
  kmsgBytes: 8 * 1024 * 1024,
  /** room kept for manifest.json, which is written last */
  manifestReserve: 4 * 1024 * 1024,
  /** errors and warnings kept per section */
  maxWarnings: 100,
} as const;

/** Routes a bundle does not capture: itself, and the spec (stored separately). */
const SKIP_ROUTES = new Set(['/v1/bundle', '/openapi.json']);
const REDACTION_POLICY =
  'as the API: environment values, secret-looking keys, command-line secrets, URL userinfo, secret query parameters and bearer tokens (src/redact.ts); raw files and log tails get the text rules';

const block = (n: number) => 512 + Math.ceil(n / 512) * 512;

class BundleWriter {
  used = 0;
  readonly trimmed = new Set<SectionKind>();
  private chain: Promise<void> = Promise.resolve();
  constructor(
    readonly pack: Pack,
    readonly maxBytes: number,
    private readonly reserve: number,
  ) {}

  /** Room left for sections (the manifest's reserve kept aside). */
  room(): number {
    return this.maxBytes - this.reserve - this.used;
  }

  /** Add one entry, in order; false (and the kind marked trimmed) when it does not fit the budget. */
  add(kind: SectionKind | 'manifest', name: string, body: Buffer): Promise<boolean> {
    const run = async () => {
      const need = block(body.length);
      if (kind !== 'manifest' && need > this.room()) {
        this.trimmed.add(kind);
        return false;
      }
      this.used += need;
      await new Promise<void>((resolve, reject) => {
        this.pack.entry({ name, size: body.length, mode: 0o644, mtime: new Date(), type: 'file' }, body, (err) => (err ? reject(err) : resolve()));
      });
      return true;
    };
    const p = this.chain.then(run);
    this.chain = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  }
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
  const ctx: Ctx = { o, w, sections, signal: o.signal };

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

  const byKind: Record<string, number> = Object.fromEntries(SECTION_KINDS.map((k) => [k, 0]));
  for (const s of sections) byKind[s.kind] = (byKind[s.kind] ?? 0) + s.redacted;
  const manifest: Manifest = {
    kind: 'nodetruth-bundle',
    formatVersion: FORMAT_VERSION,
    version: VERSION,
    node: o.deps.config.nodeName,
    capturedAt: capturedAt.toISOString(),
    finishedAt: (moment.to ?? new Date()).toISOString(),
    moment: MOMENT_NOTE,
    argv: (o.argv ?? []).map((a) => redactText(a)),
    hostRoot: o.deps.config.hostRoot,
    since: new Date(capturedAt.getTime() - sinceMs).toISOString(),
    maxBytes,
    bytes: w.used,
    trimOrder: [...TRIM_ORDER],
    trimmed: TRIM_ORDER.filter((k) => w.trimmed.has(k)),
    redaction: { marker: REDACTED, total: Object.values(byKind).reduce((a, b) => a + b, 0), byKind, policy: REDACTION_POLICY },
    sections,
  };
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

interface Ctx {
  o: CaptureOptions;
  w: BundleWriter;
  sections: Section[];
  signal: AbortSignal | undefined;
}

const now = () => new Date().toISOString();
const errText = (err: unknown) => String((err as Error)?.message ?? err).slice(0, 4000);
const aborted = (ctx: Ctx) => {
  if (ctx.signal?.aborted) throw ctx.signal.reason ?? new Error('capture aborted');
};

/** Run `fn` over items, at most `limit` at once, in order of completion. */
async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let i = 0;
  const worker = async () => {
    while (i < items.length) await fn(items[i++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

interface Answer {
  status: number;
  contentType: string;
  body: Buffer;
}

async function inject(ctx: Ctx, url: string): Promise<Answer> {
  const res = await ctx.o.app.inject({ method: 'GET', url, headers: { host: '127.0.0.1', ...ctx.o.headers } });
  return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), body: res.rawPayload };
}

/** One route answer, stored as the API gave it; a failed call becomes a section with its error. */
async function storeRoute(ctx: Ctx, url: string): Promise<Answer | null> {
  aborted(ctx);
  const t0 = performance.now();
  const time = now();
  const section: Section = { kind: 'route', name: url, source: { route: url }, time, ms: 0, bytes: 0, redacted: 0 };
  ctx.sections.push(section);
  try {
    const a = await inject(ctx, url);
    section.ms = Math.round(performance.now() - t0);
    section.status = a.status;
    section.contentType = a.contentType;
    const name = routeEntryName(url, a.contentType, ctx.sections.length);
    if (await ctx.w.add('route', name, a.body)) {
      section.path = name;
      section.bytes = a.body.length;
      section.redacted = countRedacted(a.body.toString('latin1'));
    } else section.trimmed = 'over the size budget';
    return a;
  } catch (err) {
    section.ms = Math.round(performance.now() - t0);
    section.error = errText(err);
    return null;
  }
}

const withParam = (url: string, p: string) => `${url}${url.includes('?') ? '&' : '?'}${p}`;

function json(a: Answer | null): unknown {
  if (!a || a.status !== 200 || !/json/.test(a.contentType)) return null;
  try {
    return JSON.parse(a.body.toString('utf8'));
  } catch {
    return null;
  }
}

/** The read routes: fixed ones from /openapi.json, then each pod's and container's. */
async function captureRoutes(ctx: Ctx): Promise<{ logs: Map<string, string | null> }> {
  const spec = await storeRoute(ctx, '/openapi.json');
  const doc = json(spec) as { paths?: Record<string, { get?: unknown }> } | null;
  const paths = Object.keys(doc?.paths ?? {}).filter((p) => doc!.paths![p]!.get && !p.includes('{') && !SKIP_ROUTES.has(p));
  const fixed: string[] = [];
  for (const p of paths) {
    // a throttling sample needs a window; a short one keeps the capture short
    const url = p === '/v1/throttling' ? `${p}?window=${ctx.o.throttlingWindow ?? '1s'}` : p;
    fixed.push(url);
    if (p !== '/metrics' && p !== '/healthz') fixed.push(withParam(url, 'format=text'));
  }
  const answers = new Map<string, Answer | null>();
  await eachLimit(fixed, CAPTURE_LIMITS.concurrency, async (url) => {
    const a = await storeRoute(ctx, url);
    // only the two lists whose ids the per-item routes need are kept
    if (url === '/v1/pods' || url === '/v1/containers' || url === '/v1/cgroups') answers.set(url, a);
  });

  const pods = ((json(answers.get('/v1/pods') ?? null) as { items?: { id?: unknown }[] } | null)?.items ?? []).map((p) => p.id).filter(isHexId);
  const fromCri = ((json(answers.get('/v1/containers') ?? null) as { items?: { id?: unknown }[] } | null)?.items ?? []).map((c) => c.id).filter(isHexId);
  // with the runtime down, the cgroups still name the containers (processes, namespaces, logs work without it)
  const fromCgroups = ((json(answers.get('/v1/cgroups') ?? null) as { items?: { containerId?: unknown; kind?: unknown }[] } | null)?.items ?? [])
    .filter((c) => c.kind === 'container')
    .map((c) => c.containerId)
    .filter(isHexId);
  answers.clear();
  const containers = [...new Set([...fromCri, ...fromCgroups])];

  const perItem: string[] = [];
  for (const id of pods) perItem.push(`/v1/pods/${id}`, `/v1/pods/${id}?format=text`);
  const tail = ctx.o.logTailLines ?? 100;
  for (const id of containers) {
    for (const u of [`/v1/containers/${id}`, `/v1/containers/${id}/processes`, `/v1/containers/${id}/namespaces`, `/v1/containers/${id}/logs?tailLines=${tail}`]) {
      perItem.push(u, withParam(u, 'format=text'));
    }
  }
  const logs = new Map<string, string | null>(containers.map((id) => [id, null]));
  await eachLimit(perItem, CAPTURE_LIMITS.concurrency, async (url) => {
    const a = await storeRoute(ctx, url);
    const m = /^\/v1\/containers\/([0-9a-f]{64})$/.exec(url);
    if (m) {
      const logPath = (json(a) as { logPath?: unknown } | null)?.logPath;
      if (typeof logPath === 'string' && logPath.startsWith('/')) logs.set(m[1]!, logPath);
    }
  });
  return { logs };
}

const isHexId = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{1,64}$/.test(v);

/** A raw section of one entry: run `read`, redact, store; errors recorded. */
async function storeRaw(ctx: Ctx, kind: SectionKind, name: string, source: Section['source'], entry: string, read: () => Promise<{ text: string; warnings?: string[]; trimmed?: string }>): Promise<Section> {
  aborted(ctx);
  const t0 = performance.now();
  const section: Section = { kind, name, source, time: now(), ms: 0, bytes: 0, redacted: 0 };
  ctx.sections.push(section);
  try {
    const r = await read();
    const body = Buffer.from(r.text, 'utf8');
    if (r.warnings?.length) section.warnings = r.warnings.slice(0, CAPTURE_LIMITS.maxWarnings).map((s) => s.slice(0, 4000));
    if (r.trimmed) section.trimmed = r.trimmed;
    if (await ctx.w.add(kind, entry, body)) {
      section.path = entry;
      section.bytes = body.length;
      section.redacted = countRedacted(r.text);
    } else section.trimmed = 'over the size budget';
  } catch (err) {
    section.error = errText(err);
  }
  section.ms = Math.round(performance.now() - t0);
  return section;
}

/**
 * The CRI records the routes are built from, as the client normalizes them (already redacted; redacted again, idempotently).
 * The two lists are the moment's, the very ones the answers used (a ListContainers of its own only when the shared pair failed).
 */
async function captureCri(ctx: Ctx): Promise<void> {
  const cri = ctx.o.deps.cri;
  const index = ctx.o.deps.index;
  const calls: [string, () => Promise<unknown>][] = [
    ['Version', () => cri!.version()],
    ['Status', () => cri!.status(true)],
    ['ListPodSandbox', () => index.sandboxes()],
    ['ListContainers', () => index.index().then((i) => i.containerList, () => cri!.listContainers())],
    ['ListImages', () => cri!.listImages()],
    ['ImageFsInfo', () => cri!.imageFsInfo()],
  ];
  // at once: with the runtime wedged, the whole section costs one deadline, not six
  const results = await Promise.all(
    calls.map(async ([call, fn]) => {
      const t0 = performance.now();
      try {
        if (!cri) throw new Error(`no CRI socket configured or found under ${ctx.o.deps.config.hostRoot}`);
        return { call, value: await fn(), ms: performance.now() - t0 };
      } catch (err) {
        return { call, error: err, ms: performance.now() - t0 };
      }
    }),
  );
  for (const r of results) {
    await storeRaw(ctx, 'cri', r.call, { cri: `runtime.v1 ${r.call}${cri ? ` at ${cri.endpoint}` : ''}` }, `raw/cri/${r.call}.json`, async () => {
      if ('error' in r) throw r.error;
      return { text: `${JSON.stringify(redactDeep(r.value), null, 1)}\n` };
    });
  }
}

/** Kernel log records, as the kmsg reader gives them, one JSON per line. */
async function captureKmsg(ctx: Ctx): Promise<void> {
  const kmsg = ctx.o.deps.kmsg;
  let file = '<host-root>/dev/kmsg';
  try {
    file = await kmsg.path();
  } catch {
    /* reported by the read below */
  }
  await storeRaw(ctx, 'kmsg', 'kernel log', { file }, 'raw/kmsg.ndjson', async () => {
    const items = await kmsg.readAll(ctx.signal);
    const lines: string[] = [];
    let bytes = 0;
    let trimmed: string | undefined;
    // the newest records matter most: keep the tail that fits
    for (let i = items.length - 1; i >= 0; i--) {
      const line = redactText(JSON.stringify(items[i]));
      bytes += line.length + 1;
      if (bytes > CAPTURE_LIMITS.kmsgBytes) {
        trimmed = `oldest ${i + 1} of ${items.length} records left out (section bound ${CAPTURE_LIMITS.kmsgBytes} bytes)`;
        break;
      }
      lines.push(line);
    }
    return { text: lines.reverse().join('\n') + (lines.length ? '\n' : ''), ...(trimmed ? { trimmed } : {}) };
  });
}

/** Writes that must never happen, and files reading which means nothing: not read at all. */
const CGROUP_SKIP = new Set(['cgroup.kill', 'memory.reclaim', 'cgroup.event_control']);
const CGROUP_FILE = /^[a-z][a-z0-9_]*\.[a-z0-9_.]+$/;

/** Every interface file of every kubepods cgroup, each under raw/cgroup/<host path>. */
async function captureCgroups(ctx: Ctx): Promise<void> {
  aborted(ctx);
  const fs = ctx.o.deps.hostFs;
  const t0 = performance.now();
  const section: Section = { kind: 'cgroup', name: 'kubepods cgroups', source: { file: '/sys/fs/cgroup/kubepods*' }, time: now(), ms: 0, bytes: 0, files: 0, redacted: 0 };
  ctx.sections.push(section);
  const warnings: string[] = [];
  const warn = (s: string) => {
    if (warnings.length < CAPTURE_LIMITS.maxWarnings) warnings.push(s.slice(0, 4000));
  };
  try {
    // the moment's walk: the cgroups the answers were built from
    const walked = await ctx.o.deps.cgroups.found({ names: false });
    for (const s of walked.warnings) warn(s);
    const found = walked.found;
    section.path = 'raw/cgroup/';
    for (const cg of found) {
      aborted(ctx);
      if (section.trimmed) break;
      const entries = await fs.readdir(cg.dir).catch((err: unknown) => {
        warn(`${cg.dir.hostPath}: ${errText(err)}`);
        return null;
      });
      if (!entries) continue;
      const names = entries.filter((e) => e.isFile() && CGROUP_FILE.test(e.name) && !CGROUP_SKIP.has(e.name)).map((e) => e.name).sort();
      const texts = await Promise.all(names.map((n) => fs.readIn(cg.dir, n, CAPTURE_LIMITS.cgroupFileBytes).catch(() => null)));
      for (let i = 0; i < names.length; i++) {
        const text = texts[i];
        if (text === null || text === undefined) continue; // write-only or gone
        const red = redactText(text);
        if (!(await ctx.w.add('cgroup', `raw/cgroup${cg.dir.hostPath}/${names[i]}`, Buffer.from(red, 'utf8')))) {
          section.trimmed = 'over the size budget';
          break;
        }
        section.files!++;
        section.bytes += Buffer.byteLength(red);
        section.redacted += countRedacted(red);
      }
    }
  } catch (err) {
    section.error = errText(err);
  }
  if (warnings.length) section.warnings = warnings;
  section.ms = Math.round(performance.now() - t0);
}

const JOURNAL_UNITS = ['kubelet.service', 'containerd.service'];

/** One export-format entry, values redacted; text form when the value allows it, the length-prefixed form otherwise. */
function exportEntry(entry: Map<string, string>): Buffer {
  const parts: Buffer[] = [];
  for (const [k, raw] of entry) {
    const v = k.startsWith('__') || k === '_BOOT_ID' ? raw : redactText(raw);
    // eslint-disable-next-line no-control-regex
    if (!/[\x00-\x1f\x7f]/.test(v)) parts.push(Buffer.from(`${k}=${v}\n`, 'utf8'));
    else {
      const data = Buffer.from(v, 'utf8');
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(data.length));
      parts.push(Buffer.from(`${k}\n`, 'latin1'), len, data, Buffer.from('\n'));
    }
  }
  parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}

/**
 * The kubelet and containerd journal since --since, in journal export format, run
 * with the journalctl JournalSource resolves (host one through chroot, bundled, or
 * --journalctl), an argument array, never a shell. Read through the export parser
 * and written back entry by entry with values redacted, bounded in bytes and time.
 */
async function captureJournal(ctx: Ctx, sinceMs: number): Promise<void> {
  const journal = ctx.o.deps.journal;
  const since = Math.floor((Date.now() - sinceMs) / 1000);
  const args = ['--no-pager', '--output=export', ...JOURNAL_UNITS.map((u) => `--unit=${u}`), `--since=@${since}`];
  let argv: string[] = ['journalctl', ...args];
  const section = await storeRaw(ctx, 'journal', 'kubelet and containerd journal', { argv }, 'raw/journal/kubelet-containerd.export', async () => {
    const cmd = await journal.resolve();
    argv = [cmd.file, ...cmd.args, ...args];
    const cap = Math.max(0, Math.min(CAPTURE_LIMITS.journalBytes, ctx.w.room()));
    return runJournalctl(argv, cap, ctx.signal);
  });
  section.source = { argv: argv.map((a) => a.slice(0, 4096)) };
  if (section.error === undefined && section.bytes === 0 && !section.trimmed && section.warnings?.length) section.error = section.warnings.join('; ').slice(0, 4000);
}

async function runJournalctl(argv: string[], cap: number, signal: AbortSignal | undefined): Promise<{ text: string; warnings?: string[]; trimmed?: string }> {
  const [file, ...args] = argv as [string, ...string[]];
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', SYSTEMD_COLORS: '0', SYSTEMD_PAGER: '', TZ: 'UTC' } });
  const exit = new Promise<{ code: number | null; error?: NodeJS.ErrnoException }>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ code: null, error }));
    child.once('close', (code) => resolve({ code }));
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    if (stderr.length < 16 * 1024) stderr += s;
  });
  let trimmed: string | undefined;
  const stop = (why?: string) => {
    if (why && !trimmed) trimmed = why;
    child.kill('SIGTERM');
  };
  const timer = setTimeout(() => stop(`journalctl stopped at the ${CAPTURE_LIMITS.journalDeadlineMs} ms deadline`), CAPTURE_LIMITS.journalDeadlineMs);
  const onAbort = () => stop();
  signal?.addEventListener('abort', onAbort, { once: true });
  const parser = new ExportParser();
  const out: Buffer[] = [];
  let bytes = 0;
  try {
    if (child.pid !== undefined) {
      for await (const chunk of child.stdout! as AsyncIterable<Buffer>) {
        if (trimmed) continue; // drain until exit
        for (const e of parser.push(chunk)) {
          const b = exportEntry(e);
          if (bytes + b.length > cap) {
            stop(`stopped at ${bytes} bytes (journal bound ${CAPTURE_LIMITS.journalBytes}, or the size budget left)`);
            break;
          }
          out.push(b);
          bytes += b.length;
        }
      }
    }
    const r = await exit;
    if (r.error) throw new Error(`cannot run ${file}: ${r.error.code ?? r.error.message}`);
    const warnings = stderr.split('\n').map((l) => l.trim()).filter((l) => l && l !== '-- No entries --');
    if (!trimmed && r.code !== 0 && !(r.code === 1 && /No journal files were found/.test(stderr))) throw new Error(`journalctl exited with ${r.code}: ${warnings.join('; ') || 'no message'}`);
    return { text: Buffer.concat(out).toString('utf8'), ...(warnings.length ? { warnings } : {}), ...(trimmed ? { trimmed } : {}) };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      child.kill('SIGKILL');
      await exit;
    }
  }
}

/**
 * The tail of each container's CRI log file: the runtime's logPath when the
 * container route gave one, kubelet's /var/log/containers link otherwise; opened
 * through HostFs within /var/log, never followed outside it.
 */
async function capturePodLogs(ctx: Ctx, logs: Map<string, string | null>): Promise<void> {
  aborted(ctx);
  const fs = ctx.o.deps.hostFs;
  const podLogs = ctx.o.deps.podLogs;
  const t0 = performance.now();
  const section: Section = { kind: 'podlog', name: 'container log tails', source: { file: '/var/log/pods' }, time: now(), ms: 0, bytes: 0, files: 0, redacted: 0, path: 'raw/podlogs/' };
  ctx.sections.push(section);
  const warnings: string[] = [];
  for (const [id, known] of logs) {
    aborted(ctx);
    let logPath = known;
    try {
      logPath ??= (await podLogs.locateWithoutRuntime(id)).logPath;
      const fh = await fs.openFile(logPath, { within: '/var/log' });
      if (!fh) continue;
      let text: string;
      try {
        const { size } = await fh.stat();
        const start = Math.max(0, size - CAPTURE_LIMITS.podLogTailBytes);
        const buf = Buffer.alloc(Math.min(size, CAPTURE_LIMITS.podLogTailBytes));
        const { bytesRead } = await fh.read(buf, 0, buf.length, start);
        let b = buf.subarray(0, bytesRead);
        if (start > 0) b = b.subarray(b.indexOf(0x0a) + 1); // a whole first line
        text = redactText(b.toString('utf8'));
      } finally {
        await fh.close();
      }
      if (!(await ctx.w.add('podlog', `raw/podlogs/${id}.log`, Buffer.from(text, 'utf8')))) {
        section.trimmed = 'over the size budget';
        break;
      }
      section.files!++;
      section.bytes += Buffer.byteLength(text);
      section.redacted += countRedacted(text);
    } catch (err) {
      if (warnings.length < CAPTURE_LIMITS.maxWarnings) warnings.push(`${id.slice(0, 13)}: ${errText(err)}`);
    }
  }
  if (warnings.length) section.warnings = warnings;
  section.ms = Math.round(performance.now() - t0);
}
