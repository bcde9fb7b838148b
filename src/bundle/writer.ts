/**
 * The archive as a capture writes it: the size budget (bytes counted as written,
 * uncompressed, headers included; an entry that does not fit is skipped and its
 * section marked trimmed), the limits of each section, and the way a section is
 * recorded for the manifest (time, size, redaction markers, error).
 */
import type { Pack } from 'tar-stream';
import type { CaptureOptions } from './capture.js';
import { countRedacted, type Section, type SectionKind } from './format.js';

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

const block = (n: number) => 512 + Math.ceil(n / 512) * 512;

export class BundleWriter {
  used = 0;
  readonly trimmed = new Set<SectionKind>();
  private chain: Promise<void> = Promise.resolve();
  /** set by seal(): every later entry but the manifest is refused with it */
  private sealed: Error | null = null;
  constructor(
    readonly pack: Pack,
    readonly maxBytes: number,
    private readonly reserve: number,
  ) {}

  /** Room left for sections (the manifest's reserve kept aside). */
  room(): number {
    return this.maxBytes - this.reserve - this.used;
  }

  /** No entry but the manifest from now on: the capture stopped (its deadline); work still running is refused with `why`. */
  seal(why: Error): void {
    this.sealed ??= why;
  }

  /** Wait for the entries already given to be written (or to fail). */
  settled(): Promise<void> {
    return this.chain;
  }

  /**
   * Add one entry, in order; false (and the kind marked trimmed) when it does not fit the budget.
   * Rejects when the archive cannot take it (the output failed or was cut, the writer sealed).
   */
  add(kind: SectionKind | 'manifest', name: string, body: Buffer): Promise<boolean> {
    const run = async () => {
      if (kind !== 'manifest' && this.sealed) throw this.sealed;
      const need = block(body.length);
      if (kind !== 'manifest' && need > this.room()) {
        this.trimmed.add(kind);
        return false;
      }
      this.used += need;
      await new Promise<void>((resolve, reject) => {
        const sink = this.pack.entry({ name, size: body.length, mode: 0o644, mtime: new Date(), type: 'file' }, body, (err) => (err ? reject(err) : resolve()));
        // When the output fails (a client gone mid-entry), the pack destroys the entry's stream with
        // that error: the callback above receives it, and this listener keeps streamx from emitting it
        // a second time as an 'error' nobody listens to, which would end the process.
        sink.on('error', () => {});
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

/** What every step of one capture shares. */
export interface CaptureContext {
  o: CaptureOptions;
  w: BundleWriter;
  sections: Section[];
  signal: AbortSignal | undefined;
}

export const now = () => new Date().toISOString();
export const errText = (err: unknown) => String((err as Error)?.message ?? err).slice(0, 4000);
export const aborted = (ctx: CaptureContext) => {
  if (ctx.signal?.aborted) throw ctx.signal.reason ?? new Error('capture aborted');
};

/** A raw section of one entry: run `read`, redact, store; errors recorded. */
export async function storeRaw(ctx: CaptureContext, kind: SectionKind, name: string, source: Section['source'], entry: string, read: () => Promise<{ text: string; warnings?: string[]; trimmed?: string }>): Promise<Section> {
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

/** One more file of a many-file section (cgroup files, log tails); false, and the section marked trimmed, once the budget is spent. */
export async function addFile(ctx: CaptureContext, section: Section, name: string, text: string): Promise<boolean> {
  const body = Buffer.from(text, 'utf8');
  if (!(await ctx.w.add(section.kind, name, body))) {
    section.trimmed = 'over the size budget';
    return false;
  }
  section.files!++;
  section.bytes += body.length;
  section.redacted += countRedacted(text);
  return true;
}
