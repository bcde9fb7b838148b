/**
 * One-shot reads of a container's log: forward from the live file's start, or
 * the tail (tailLines, sinceTime) read backwards across the live and rotated
 * files. Both bounded by lines, bytes of answer and bytes read from disk.
 */
import path from 'node:path';
import { isSourceError, SourceError } from '../errors.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { ForwardLines, LineJoiner, MAX_HEADER_BYTES, parseCriLine, type LineParts, type LogEntry, type RawLine } from './cri-log.js';
import { gunzipTail } from './gzip.js';
import { attemptFiles, openLog, type OpenLog } from './paths.js';
import type { PodLogLimits, PodLogQuery, PodLogResult } from './podlogs.js';
import { fileSource, memSource, scanBackward, TailCollector, type ByteSource } from './tail.js';
import { nextTurn } from '../../lib/turns.js';

/** What a read needs: the host's files and the bounds. */
export interface LogReadContext {
  fs: HostFs;
  limits: PodLogLimits;
}

export interface TailRead {
  result: PodLogResult;
  /** follow: unfinished P runs at the end of the live file, for the joiner */
  seeds: LineParts[];
  /** follow: where the live file's trailing line without a newline starts (following reads it again) */
  resumeAt: number | null;
}

/** The line cap of an answer: maxLineBytes, or less when the answer's byte bound is smaller. */
export function lineCap(limits: PodLogLimits, limitBytes: number | null): number {
  return Math.max(0, Math.min(limits.maxLineBytes, limitBytes ?? limits.defaultLimitBytes));
}

/** No tailLines, no sinceTime: the live file from its start, as kubelet reads it, until the answer's byte bound. */
export async function readForward({ fs, limits }: LogReadContext, logPath: string, q: PodLogQuery, liveEnd?: number): Promise<PodLogResult> {
  await attemptFiles(fs, logPath); // the same path checks as a tail
  const o = await openLog(fs, logPath);
  if (!o) throw new SourceError('not_found', `log file ${logPath} does not exist`);
  const limit = q.limitBytes ?? limits.defaultLimitBytes;
  const cap = lineCap(limits, limit);
  const joiner = new LineJoiner(cap);
  const lines = new ForwardLines(cap + MAX_HEADER_BYTES);
  const entries: LogEntry[] = [];
  const counts = { malformed: 0, cut: 0 };
  let bytes = 0;
  let truncatedBy: PodLogResult['truncatedBy'] = null;
  const add = (e: LogEntry): boolean => {
    const size = Buffer.byteLength(e.message) + 1;
    if (bytes + size > limit) {
      truncatedBy = 'limitBytes';
      return false;
    }
    if (e.cut) counts.cut++;
    bytes += size;
    entries.push(e);
    return true;
  };
  const take = (raws: RawLine[]): boolean => {
    for (const raw of raws) {
      const l = parseCriLine(raw.buf, raw.cut);
      if (!l) {
        if (raw.buf.length > 0) counts.malformed++;
        continue;
      }
      if (q.stream !== 'all' && l.stream !== q.stream) continue;
      const e = joiner.push(l);
      if (e && !add(e)) return false;
    }
    raws.length = 0;
    return true;
  };
  try {
    const end = liveEnd === undefined ? o.size : Math.min(liveEnd, o.size);
    const buf = Buffer.allocUnsafe(limits.chunkBytes);
    const out: RawLine[] = [];
    let pos = 0;
    let open = true;
    while (pos < end && open) {
      if (pos >= limits.readBudgetBytes) {
        truncatedBy = 'readBudget';
        break;
      }
      const { bytesRead } = await o.fh.read(buf, 0, Math.min(buf.length, end - pos), pos);
      if (bytesRead === 0) break;
      pos += bytesRead;
      lines.push(buf.subarray(0, bytesRead), out);
      open = take(out);
      await nextTurn('plain');
    }
    if (open && truncatedBy === null) {
      const last = lines.end();
      if (last) open = take([last]);
      // unfinished P runs at the end of the file (still being written, or the container died mid-line)
      for (const e of joiner.flush()) if (open) open = add(e);
    }
  } finally {
    await o.fh.close();
  }
  return { file: logPath, files: [logPath], entries, truncated: truncatedBy !== null, truncatedBy, warnings: warningsOf(counts) };
}

/**
 * The tail: files newest first, each read backwards in chunks; P runs are
 * joined across chunk and file boundaries. `seed` (follow): the trailing
 * physical line without a newline is left out and unfinished P runs are
 * returned as seeds instead of entries.
 */
export async function readTail({ fs, limits }: LogReadContext, logPath: string, q: PodLogQuery, liveEnd: number | undefined, seed: boolean): Promise<TailRead> {
  const files = await attemptFiles(fs, logPath);
  const limit = q.limitBytes ?? limits.defaultLimitBytes;
  const cap = lineCap(limits, limit);
  const col = new TailCollector({ want: q.tailLines, sinceUs: q.sinceUs, stream: q.stream, limit, cap, seed });
  const budget = { left: limits.readBudgetBytes };
  const warnings: string[] = [];
  const used: string[] = [];
  let outOfData = false;
  let resumeAt: number | null = null;
  for (let i = files.length - 1; i >= 0 && !col.done(); i--) {
    const f = files[i]!;
    const live = i === files.length - 1;
    let src: ByteSource;
    let end: number;
    let headLost = false;
    let close = async () => {};
    if (f.endsWith('.gz')) {
      const g = await gunzipTail(fs, limits, f);
      if ('skip' in g) {
        warnings.push(g.skip);
        if (g.stop) {
          outOfData = true;
          break;
        }
        continue;
      }
      src = memSource(g.buf);
      end = g.buf.length;
      headLost = g.headLost;
      if (headLost) warnings.push(`${path.posix.basename(f)}: only its newest ${g.buf.length} decompressed bytes were read`);
    } else {
      let o: OpenLog | null;
      try {
        o = await openLog(fs, f);
      } catch (err) {
        if (live || !isSourceError(err)) throw err;
        warnings.push(`${path.posix.basename(f)} skipped: ${err.message}`);
        continue;
      }
      if (!o) {
        if (live) throw new SourceError('not_found', `log file ${f} does not exist`);
        continue;
      }
      src = fileSource(o.fh);
      end = live && liveEnd !== undefined ? Math.min(liveEnd, o.size) : o.size;
      close = () => o.fh.close();
    }
    used.unshift(f);
    try {
      const r = await scanBackward(src, end, { chunk: limits.chunkBytes, maxLine: cap + MAX_HEADER_BYTES, headLost, excludeTrailing: live && seed }, budget, (batch) => {
        for (const l of batch) {
          col.push(l);
          if (col.done()) return true;
        }
        return false;
      });
      if (live) resumeAt = r.trailingStart;
      if (r.outOfData) {
        outOfData = true;
        break;
      }
    } finally {
      await close();
    }
  }
  const entries = col.finish(!outOfData);
  const truncatedBy = col.limitHit ? 'limitBytes' : outOfData && !col.done() ? 'readBudget' : null;
  if (truncatedBy === 'readBudget') warnings.push(`stopped after reading ${limits.readBudgetBytes - budget.left} bytes: older lines were not read`);
  warnings.unshift(...warningsOf({ malformed: col.malformed, cut: entries.reduce((n, e) => n + (e.cut ? 1 : 0), 0) }));
  return {
    result: { file: logPath, files: used, entries, truncated: truncatedBy !== null, truncatedBy, warnings },
    seeds: col.seeds,
    resumeAt,
  };
}

function warningsOf(c: { malformed: number; cut: number }): string[] {
  const w: string[] = [];
  if (c.malformed > 0) w.push(`skipped ${c.malformed} malformed lines (not CRI log format)`);
  if (c.cut > 0) w.push(`${c.cut} lines longer than the line cap were cut (their entries carry cut: true)`);
  return w;
}
