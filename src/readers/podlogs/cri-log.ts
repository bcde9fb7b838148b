/**
 * CRI container log files (kubelet/cri-api "CRI log format"), one line each:
 *
 *   <RFC3339Nano> <stdout|stderr> <P|F> <message>
 *
 * P marks a partial line (the runtime split a long line, containerd at 16 KiB);
 * the parts up to the next F of the same stream make one logical line. Pure:
 * bytes in, records out. Everything here is bounded: a physical line is kept
 * only up to its head, a joined logical line only up to `maxLineBytes`.
 */
import { redactLogText } from '../../redact.js';
import { parseRfc3339Micros } from '../journal/time.js';

export type Stream = 'stdout' | 'stderr';

/** One physical line, parsed. `message` is raw bytes: UTF-8 is decoded once per logical line, so a character split across P parts survives. */
interface CriLogLine {
  /** the timestamp as written (RFC3339Nano) */
  time: string;
  /** µs since the epoch, for comparisons */
  us: number;
  stream: Stream;
  partial: boolean;
  message: Buffer;
  /** the physical line was longer than the reader keeps; message is its head */
  cut: boolean;
}

export interface LogEntry {
  time: string;
  stream: Stream;
  message: string;
  /** present (true) when the logical line was longer than the cap and `message` is its head */
  cut?: true;
}

/**
 * Default cap of one joined logical line, in bytes of message. kubelet's own
 * reader joins without a cap; we cannot, since a container that never writes a
 * newline would grow every reader's memory. 1 MiB keeps any real log line
 * (stack traces, JSON documents) whole. The answer's byte bound cuts lower
 * when it is smaller.
 */
export const MAX_LINE_BYTES = 1024 * 1024;
/** the header before the message: 35 bytes of time, stream, tag; more is not CRI format */
export const MAX_HEADER_BYTES = 128;

const SP = 0x20;
const latin1 = (b: Buffer, from: number, to: number) => b.toString('latin1', from, to);

/** Parse one physical line (without its newline); null when it is not CRI format. */
export function parseCriLine(b: Buffer, cut = false): CriLogLine | null {
  const a = b.indexOf(SP);
  if (a < 1 || a > 40) return null;
  const bEnd = b.indexOf(SP, a + 1);
  if (bEnd < 0) return null;
  const stream = latin1(b, a + 1, bEnd);
  if (stream !== 'stdout' && stream !== 'stderr') return null;
  const time = latin1(b, 0, a);
  const us = parseRfc3339Micros(time);
  if (us === null) return null;
  // tag: P or F, possibly followed by ":..." in future formats; the message may be empty
  let c = b.indexOf(SP, bEnd + 1);
  if (c > bEnd + 64) return null;
  if (c < 0) {
    if (b.length - bEnd > 64) return null;
    c = b.length;
  }
  const tag = latin1(b, bEnd + 1, c);
  const colon = tag.indexOf(':');
  const t = colon < 0 ? tag : tag.slice(0, colon);
  if (t !== 'P' && t !== 'F') return null;
  return { time, us, stream, partial: t === 'P', message: b.subarray(Math.min(c + 1, b.length)), cut };
}

/** Bytes → text: invalid UTF-8 becomes U+FFFD (the decoder), and so does NUL (a terminal must not receive one). */
function decodeMessage(b: Buffer): string {
  const s = b.toString('utf8');
  return s.includes('\0') ? s.replaceAll('\0', '\uFFFD') : s;
}

/**
 * One logical line being assembled, holding at most `cap` bytes: its head.
 * Forward readers append parts, the backward tail reader prepends them.
 */
export class LineParts {
  time: string;
  us: number;
  readonly stream: Stream;
  private bufs: Buffer[] = [];
  bytes = 0;
  cut = false;
  /** no more parts are wanted (forward: the cap was reached) */
  full = false;

  constructor(
    first: CriLogLine,
    readonly cap: number,
  ) {
    this.time = first.time;
    this.us = first.us;
    this.stream = first.stream;
    this.append(first);
  }

  /** forward: keep the head, count the rest as cut */
  append(l: CriLogLine): void {
    const room = this.cap - this.bytes;
    // past the cap, or after a physical line we kept only the head of, more text would not be contiguous
    if (l.message.length > room || l.cut) {
      this.cut = true;
      this.full = true;
    }
    const take = Math.min(room, l.message.length);
    if (take > 0) {
      // copy: a part must not pin the whole read chunk it was sliced from
      this.bufs.push(Buffer.from(l.message.subarray(0, take)));
      this.bytes += take;
    }
  }

  /** backward: this part comes before everything held; returns the change in bytes held */
  prepend(l: CriLogLine): number {
    const before = this.bytes;
    this.time = l.time;
    this.us = l.us;
    if (l.cut) {
      // the head of this part is all we have of it, so what follows it is no longer contiguous
      this.bufs = [];
      this.bytes = 0;
      this.cut = true;
    }
    const take = Math.min(this.cap, l.message.length);
    if (take < l.message.length) this.cut = true;
    if (take > 0) {
      this.bufs.unshift(Buffer.from(l.message.subarray(0, take)));
      this.bytes += take;
    }
    // keep the head: drop from the end
    while (this.bytes > this.cap) {
      this.cut = true;
      const last = this.bufs.pop()!;
      this.bytes -= last.length;
      const keep = this.cap - this.bytes;
      if (keep > 0) {
        this.bufs.push(last.subarray(0, keep));
        this.bytes += keep;
      }
    }
    return this.bytes - before;
  }

  /** The logical line as it leaves the agent: decoded, and its secrets redacted (the free-text rules, src/redact.ts). */
  entry(): LogEntry {
    const e: LogEntry = { time: this.time, stream: this.stream, message: redactLogText(decodeMessage(this.bufs.length === 1 ? this.bufs[0]! : Buffer.concat(this.bufs, this.bytes))) };
    if (this.cut) e.cut = true;
    return e;
  }
}

/**
 * Joins P parts per stream into logical lines, reading forward (file order).
 * A line that reaches the cap is emitted at once, cut, and the rest of its
 * parts up to the F are skipped: memory stays at `cap` per stream however
 * long a container writes without a newline, and a follower sees the line.
 */
export class LineJoiner {
  private pending: Record<Stream, LineParts | null> = { stdout: null, stderr: null };
  /** the stream is inside a cut line: skip parts until its F */
  private skipping: Record<Stream, boolean> = { stdout: false, stderr: false };

  constructor(readonly cap = MAX_LINE_BYTES) {}

  push(l: CriLogLine): LogEntry | null {
    const s = l.stream;
    if (this.skipping[s]) {
      if (!l.partial) this.skipping[s] = false;
      return null;
    }
    let p = this.pending[s];
    if (p) p.append(l);
    else p = new LineParts(l, this.cap);
    if (!l.partial || p.full) {
      this.pending[s] = null;
      if (l.partial) this.skipping[s] = true;
      return p.entry();
    }
    this.pending[s] = p;
    return null;
  }

  /** seed an unfinished line (the backlog's trailing P run) so following completes it */
  seed(p: LineParts): void {
    this.pending[p.stream] = p;
  }

  /** Unfinished partial lines at the end of the input (a container still writing, or killed mid-line). */
  flush(): LogEntry[] {
    const out: LogEntry[] = [];
    for (const s of ['stdout', 'stderr'] as const) {
      const p = this.pending[s];
      if (p) out.push(p.entry());
      this.pending[s] = null;
    }
    return out;
  }
}

/** A physical line as the readers cut it from a file: its head, whether it was longer. */
export interface RawLine {
  buf: Buffer;
  cut: boolean;
}

/**
 * Splits a byte stream into physical lines, forward, chunk by chunk. The
 * unfinished line between chunks is kept only up to `maxBytes`; the rest of
 * it is skipped until its newline, and the line comes out cut.
 */
export class ForwardLines {
  private carry: Buffer[] = [];
  private carryBytes = 0;
  private carryCut = false;

  constructor(readonly maxBytes: number) {}

  push(chunk: Buffer, out: RawLine[]): void {
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, from);
      if (nl < 0) break;
      this.add(chunk.subarray(from, nl));
      out.push(this.take());
      from = nl + 1;
    }
    if (from < chunk.length) this.add(chunk.subarray(from));
  }

  /** the trailing line without a newline, if any */
  end(): RawLine | null {
    return this.carryBytes > 0 || this.carryCut ? this.take() : null;
  }

  private add(piece: Buffer): void {
    const room = this.maxBytes - this.carryBytes;
    if (piece.length > room) this.carryCut = true;
    const take = Math.min(room, piece.length);
    if (take > 0) {
      this.carry.push(Buffer.from(piece.subarray(0, take)));
      this.carryBytes += take;
    }
  }

  private take(): RawLine {
    const buf = this.carry.length === 1 ? this.carry[0]! : Buffer.concat(this.carry, this.carryBytes);
    const r = { buf, cut: this.carryCut };
    this.carry = [];
    this.carryBytes = 0;
    this.carryCut = false;
    return r;
  }
}

/** kubelet's rotated file suffix: <name>.<20060102-150405>[.gz] */
export const ROTATED = /^(.+)\.(\d{8}-\d{6})(\.gz)?$/;
