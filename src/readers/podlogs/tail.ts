/**
 * Reading a CRI log file backwards: physical lines from the end in bounded chunks
 * (scanBackward), and the logical lines of a tail assembled from them newest first
 * (TailCollector). Pure of paths and HTTP: read.ts opens the files and decides what to read.
 */
import type { promises as fsp } from 'node:fs';
import { LineParts, parseCriLine, type LogEntry, type RawLine, type Stream } from './cri-log.js';
import { nextTurn } from '../../lib/turns.js';

/** random access to bytes: a file, or a decompressed .gz tail in memory */
export interface ByteSource {
  read(pos: number, len: number): Promise<Buffer>;
}

export const fileSource = (fh: fsp.FileHandle): ByteSource => ({
  async read(pos, len) {
    const b = Buffer.allocUnsafe(len);
    const { bytesRead } = await fh.read(b, 0, len, pos);
    return b.subarray(0, bytesRead);
  },
});

export const memSource = (buf: Buffer): ByteSource => ({
  read: async (pos, len) => buf.subarray(pos, pos + len),
});

/**
 * Physical lines of [0, end) from the end backwards, newest first, handed to
 * `sink` one chunk's worth at a time (true from sink: stop). A line longer
 * than `maxLine` is not held whole: only its position is kept while the scan
 * looks for its start, then its head is read again. `headLost`: the source
 * starts mid-line (a .gz tail), so its first line is dropped.
 */
export async function scanBackward(
  src: ByteSource,
  end: number,
  o: { chunk: number; maxLine: number; headLost: boolean; excludeTrailing: boolean },
  budget: { left: number },
  sink: (batch: RawLine[]) => boolean,
): Promise<{ outOfData: boolean; trailingStart: number }> {
  let pos = end;
  let carry: Buffer[] = [];
  let carryBytes = 0;
  let overflow = false;
  let first = true;
  let trailingStart = end;
  const lineOf = async (piece: Buffer, lineStart: number): Promise<RawLine> => {
    let r: RawLine;
    if (overflow) r = { buf: await src.read(lineStart, o.maxLine), cut: true };
    else {
      const buf = carryBytes === 0 ? piece : Buffer.concat([piece, ...carry]);
      r = buf.length > o.maxLine ? { buf: buf.subarray(0, o.maxLine), cut: true } : { buf, cut: false };
    }
    carry = [];
    carryBytes = 0;
    overflow = false;
    return r;
  };
  while (pos > 0) {
    if (budget.left <= 0) return { outOfData: true, trailingStart };
    const len = Math.min(o.chunk, pos, budget.left);
    const start = pos - len;
    const buf = await src.read(start, len);
    if (buf.length < len) return { outOfData: true, trailingStart }; // the file shrank under us
    budget.left -= len;
    const batch: RawLine[] = [];
    let j = buf.length;
    for (;;) {
      const i = j > 0 ? buf.lastIndexOf(0x0a, j - 1) : -1;
      if (i < 0) break;
      const line = await lineOf(buf.subarray(i + 1, j), start + i + 1);
      if (first) {
        first = false;
        trailingStart = start + i + 1;
        if (!o.excludeTrailing && line.buf.length > 0) batch.push(line);
      } else if (line.buf.length > 0) batch.push(line);
      j = i;
    }
    if (j > 0 && !overflow) {
      carry.unshift(buf.subarray(0, j));
      carryBytes += j;
      if (carryBytes > o.maxLine) {
        overflow = true;
        carry = [];
        carryBytes = 0;
      }
    }
    pos = start;
    if (batch.length > 0 && sink(batch)) return { outOfData: false, trailingStart };
    await nextTurn('plain');
  }
  if (o.headLost) return { outOfData: true, trailingStart };
  // the first line of the source
  const line = await lineOf(Buffer.alloc(0), 0);
  if (first) {
    trailingStart = 0;
    if (o.excludeTrailing) return { outOfData: false, trailingStart };
  }
  if (line.buf.length > 0) sink([line]);
  return { outOfData: false, trailingStart };
}

interface Group {
  p: LineParts;
  complete: boolean;
  dropped: boolean;
}

/**
 * Assembles the tail from physical lines seen newest first. A logical line is
 * found from its end (its F, or the last P of an unfinished run) and completed
 * when the line before it in the same stream shows up; answers are ordered by
 * where each logical line ends. Holds at most the answer's byte bound plus one
 * capped line per stream.
 */
export class TailCollector {
  private groups: Array<Group | null> = [];
  private head = 0;
  private admitted: LogEntry[] = []; // newest first
  private admittedBytes = 0;
  private heldBytes = 0; // message bytes of groups[head..]
  private pending: Record<Stream, Group | null> = { stdout: null, stderr: null };
  private closed: Record<Stream, boolean>;
  private seeding: Record<Stream, LineParts | null> = { stdout: null, stderr: null };
  /** no more logical lines are wanted: only the pending ones are completed */
  private full: boolean;
  limitHit = false;
  malformed = 0;
  readonly seeds: LineParts[] = [];

  constructor(private readonly q: { want: number | null; sinceUs: number | null; stream: 'stdout' | 'stderr' | 'all'; limit: number; cap: number; seed: boolean }) {
    this.closed = { stdout: q.stream === 'stderr', stderr: q.stream === 'stdout' };
    this.full = q.want === 0;
    if (this.full) this.closed = { stdout: true, stderr: true };
  }

  done(): boolean {
    if (this.seeding.stdout || this.seeding.stderr) return false;
    return (this.closed.stdout && this.closed.stderr) || (this.full && !this.pending.stdout && !this.pending.stderr);
  }

  push(raw: RawLine): void {
    const l = parseCriLine(raw.buf, raw.cut);
    if (!l) {
      this.malformed++;
      return;
    }
    const s = l.stream;
    if (this.closed[s]) return;
    const old = this.q.sinceUs !== null && l.us < this.q.sinceUs;
    const sd = this.seeding[s];
    if (sd) {
      if (l.partial) {
        if (old) {
          this.seeding[s] = null;
          this.closed[s] = true;
        } else sd.prepend(l);
        return;
      }
      // an F: the unfinished run starts right after it
      this.seeds.push(sd);
      this.seeding[s] = null;
    }
    const g = this.pending[s];
    if (old) {
      // CRI log lines are in time order: nothing of this stream before here is wanted
      if (g) {
        if (l.partial) {
          g.dropped = true; // its first part is older than sinceTime
          this.heldBytes -= g.p.bytes;
        } else g.complete = true;
        this.pending[s] = null;
      }
      this.closed[s] = true;
      this.admit();
      return;
    }
    if (g && l.partial) {
      this.heldBytes += g.p.prepend(l);
      this.prune();
      return;
    }
    if (g) {
      g.complete = true;
      this.pending[s] = null;
    }
    if (l.partial && this.q.seed) {
      this.seeding[s] = new LineParts(l, this.q.cap);
      return;
    }
    if (this.full) {
      this.closed[s] = true;
      this.admit();
      return;
    }
    // l ends a logical line: an F, or the last P of a run that never got its F
    const ng: Group = { p: new LineParts(l, this.q.cap), complete: false, dropped: false };
    this.groups.push(ng);
    this.heldBytes += ng.p.bytes;
    this.pending[s] = ng;
    // counted toward tailLines only once admitted: a line found by its end may still turn out
    // to start before sinceTime (its first P part older), and then it is not one of the tail
    this.admit();
    this.prune();
  }

  /** `reachedStart`: every file was read to its start, so pending lines are complete; else they lack their head */
  finish(reachedStart: boolean): LogEntry[] {
    for (const s of ['stdout', 'stderr'] as const) {
      const g = this.pending[s];
      if (g) {
        g.complete = true;
        if (!reachedStart) g.p.cut = true;
        this.pending[s] = null;
      }
      const sd = this.seeding[s];
      if (sd) this.seeds.push(sd);
      this.seeding[s] = null;
    }
    this.admit();
    return this.admitted.reverse();
  }

  /** move complete lines, newest first, into the answer while they fit its byte bound */
  private admit(): void {
    while (this.head < this.groups.length) {
      const g = this.groups[this.head]!;
      if (!g.complete && !g.dropped) return;
      this.groups[this.head++] = null;
      if (g.dropped) continue;
      this.heldBytes -= g.p.bytes;
      const size = g.p.bytes + 1;
      if (this.admittedBytes + size > this.q.limit) {
        this.hitLimit();
        return;
      }
      this.admitted.push(g.p.entry());
      this.admittedBytes += size;
      if (this.q.want !== null && this.admitted.length >= this.q.want) {
        // the newest `want` lines by where they end are in: whatever is still open ends earlier
        // (a stream still collecting the unfinished run a follow hands on stays open until its start)
        this.full = true;
        this.closed = { stdout: this.seeding.stdout === null, stderr: this.seeding.stderr === null };
        this.pending = { stdout: null, stderr: null };
        this.groups.length = this.head;
        this.heldBytes = 0;
        return;
      }
    }
  }

  private hitLimit(): void {
    this.limitHit = true;
    this.full = true;
    this.closed = { stdout: true, stderr: true };
    this.pending = { stdout: null, stderr: null };
    this.seeding = { stdout: null, stderr: null };
    this.groups.length = this.head;
    this.heldBytes = 0;
  }

  /**
   * Lines wait behind an older-ending one still being completed (a long P run
   * of the other stream). Those that cannot fit the byte bound even so are
   * dropped now, so what is held stays within the bound.
   */
  private prune(): void {
    while (this.groups.length > this.head + 1 && this.admittedBytes + this.heldBytes + (this.groups.length - this.head) > this.q.limit) {
      const g = this.groups.pop()!;
      this.heldBytes -= g.p.bytes;
      const s = g.p.stream;
      if (this.pending[s] === g) {
        this.pending[s] = null;
        this.closed[s] = true;
      }
      this.limitHit = true;
      this.full = true;
    }
  }
}
