/**
 * The per-cgroup families in the Prometheus text format, exactly as prom-client writes
 * it: HELP, TYPE, one line per series (the container labels, then the family's own),
 * blocks separated by a blank line. Not through prom-client: 13 families x 1,450 cgroups
 * on a 1,000-container node are ~19,000 series, and its per-series label hashing and
 * formatting are the largest part of a scrape made through it.
 */
import type { CgroupRecord } from '../model/cgroup.js';
import { SLICING, type Slicing } from '../lib/slices.js';
import { escapeLabel, escapeText, type CgroupSeries } from './labels.js';

export interface CgroupFamily {
  name: string;
  help: string;
  kind: 'gauge' | 'counter';
  /** null: the cgroup has no such value (file or key absent); the series is left out */
  value: (r: CgroupRecord) => number | null;
  /** the family's own labels after the container labels, e.g. cpu="total" */
  extra?: Readonly<Record<string, string>>;
}

/** Bytes written in chunks of this size (one allocation each); a longer piece gets a chunk of its own. */
const CHUNK_BYTES = 1 << 20;

/**
 * UTF-8 bytes appended to chunks, never to a string: the text of a 1,000-container node is 7.5 MB,
 * and as a string it would be built (a rope of ~19,000 lines), flattened, and encoded again
 * for the socket. Here each byte is written once and the chunks are copied once, into the answer.
 */
class Bytes {
  readonly chunks: Buffer[] = [];
  private buf = Buffer.allocUnsafeSlow(CHUNK_BYTES);
  private pos = 0;
  /** bytes written since the last yield */
  sinceYield = 0;

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    if (this.pos > 0) this.chunks.push(this.buf.subarray(0, this.pos));
    this.buf = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, n));
    this.pos = 0;
  }

  bytes(b: Buffer): void {
    this.room(b.length);
    b.copy(this.buf, this.pos);
    this.pos += b.length;
    this.sinceYield += b.length;
  }

  text(s: string): void {
    const n = Buffer.byteLength(s);
    this.room(n);
    this.pos += this.buf.write(s, this.pos, n, 'utf8');
    this.sinceYield += n;
  }

  /** a series value as JS prints it (`${v}`, as prom-client does): integers digit by digit, the rest through String() */
  value(v: number): void {
    if (!(v >= 0 && v <= Number.MAX_SAFE_INTEGER && Math.floor(v) === v)) return this.text(String(v));
    let digits = 1;
    for (let x = v; x >= 10; x = Math.floor(x / 10)) digits++;
    this.room(digits);
    let x = v;
    for (let i = this.pos + digits - 1; i >= this.pos; i--) {
      this.buf[i] = 48 + (x % 10);
      x = Math.floor(x / 10);
    }
    this.pos += digits;
    this.sinceYield += digits;
  }

  done(): Buffer[] {
    if (this.pos > 0) this.chunks.push(this.buf.subarray(0, this.pos));
    this.pos = 0;
    this.buf = Buffer.alloc(0);
    return this.chunks;
  }
}

/**
 * Values that are absent or not finite are left out, and so are negative counter values
 * (prom-client refuses them). A turn of the event loop after every `slicing.sliceChars` bytes.
 * Each series' label text is encoded once for all the families; the answer is the chunks,
 * which the caller copies into one body with the rest of the scrape.
 */
export async function renderCgroupChunks(families: readonly CgroupFamily[], series: readonly CgroupSeries[], slicing: Slicing = SLICING): Promise<Buffer[]> {
  const out = new Bytes();
  const labels = series.map((s) => Buffer.from(s.labels));
  for (let k = 0; k < families.length; k++) {
    const f = families[k]!;
    const extra = Object.entries(f.extra ?? {})
      .map(([k, v]) => `,${k}="${escapeLabel(v)}"`)
      .join('');
    const counter = f.kind === 'counter';
    const head = Buffer.from(`\n${f.name}{`);
    const tail = Buffer.from(`${extra}} `);
    // blocks separated by a blank line
    out.text(`${k > 0 ? '\n\n' : ''}# HELP ${f.name} ${escapeText(f.help)}\n# TYPE ${f.name} ${f.kind}`);
    for (let i = 0; i < series.length; i++) {
      const v = f.value(series[i]!.rec);
      if (v === null || !Number.isFinite(v) || (counter && v < 0)) continue;
      out.bytes(head);
      out.bytes(labels[i]!);
      out.bytes(tail);
      out.value(v);
      if (out.sinceYield >= slicing.sliceChars) {
        out.sinceYield = 0;
        await slicing.pause();
      }
    }
  }
  return out.done();
}
