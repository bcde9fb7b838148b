/**
 * Following a container's live log by polling: the backlog (a tail) first, then
 * what is appended, across rotation (the file renamed and replaced, or truncated).
 */
import { promises as fsp } from 'node:fs';
import { SourceError } from '../errors.js';
import { sleep } from '../../lib/concurrency.js';
import { ForwardLines, LineJoiner, MAX_HEADER_BYTES, parseCriLine, type LogEntry, type RawLine, type Stream } from './cri-log.js';
import { openLog } from './paths.js';
import type { PodLogQuery } from './podlogs.js';
import { lineCap, readTail, type LogReadContext, type TailRead } from './read.js';

export async function* followLog(ctx: LogReadContext, logPath: string, q: PodLogQuery, signal: AbortSignal, pollMs = 250): AsyncGenerator<LogEntry, void, undefined> {
  const { fs, limits } = ctx;
  const first = await openLog(fs, logPath);
  if (!first) throw new SourceError('not_found', `log file ${logPath} does not exist`);
  let fh: fsp.FileHandle | null = first.fh;
  let ino = first.ino;
  const cap = lineCap(limits, null);
  const joiner = new LineJoiner(cap);
  let lines = new ForwardLines(cap + MAX_HEADER_BYTES);
  let offset: number;
  let backlog: TailRead;
  try {
    // the backlog ends exactly where following starts: nothing lost, nothing twice. Its
    // trailing unfinished line (no newline yet) is read again by following, and its
    // unfinished P run is handed to the joiner, so following completes both.
    backlog = await readTail(ctx, logPath, { ...q, tailLines: q.tailLines ?? (q.sinceUs === null ? 10 : null), limitBytes: null }, first.size, true);
    offset = backlog.resumeAt ?? first.size;
    for (const p of backlog.seeds) joiner.seed(p);
  } catch (err) {
    await first.fh.close();
    throw err;
  }
  const out: RawLine[] = [];
  const want = (s: Stream) => q.stream === 'all' || q.stream === s;
  const emit = function* (raws: RawLine[]): Generator<LogEntry> {
    for (const raw of raws) {
      const l = parseCriLine(raw.buf, raw.cut);
      if (!l || !want(l.stream)) continue; // not CRI format: skipped (a follow has no warnings list)
      const e = joiner.push(l);
      if (e) yield e;
    }
    raws.length = 0;
  };
  const drain = async function* (h: fsp.FileHandle): AsyncGenerator<LogEntry> {
    // bounded chunks until the end as it is now: a container that wrote 100 MiB since the
    // last poll is read 64 KiB at a time, each chunk's lines sent before the next read
    const buf = Buffer.allocUnsafe(limits.chunkBytes);
    while (!signal.aborted) {
      const { bytesRead } = await h.read(buf, 0, buf.length, offset);
      if (bytesRead === 0) return;
      offset += bytesRead;
      lines.push(buf.subarray(0, bytesRead), out);
      yield* emit(out);
    }
  };
  try {
    // inside the try: a client that goes away during the backlog ends the generator
    // at one of these yields, and only the finally closes the file then
    for (const e of backlog.result.entries) yield e;
    while (!signal.aborted) {
      await sleep(pollMs, signal);
      if (signal.aborted) break;
      if (fh) {
        const now = await fsp.stat(await fs.resolve(logPath)).catch(() => null);
        if (!now || now.ino !== ino || now.size < offset) {
          // rotated (renamed, replaced or truncated): finish the old file first
          yield* drain(fh);
          const last = lines.end();
          if (last) yield* emit([last]);
          lines = new ForwardLines(cap + MAX_HEADER_BYTES);
          if (now && now.ino === ino) offset = 0; // truncated in place
          else {
            await fh.close();
            fh = null;
          }
        }
      }
      if (!fh) {
        // the runtime reopens the file after kubelet renamed it; until then, keep polling
        const o = await openLog(fs, logPath).catch(() => null);
        if (!o) continue;
        fh = o.fh;
        ino = o.ino;
        offset = 0;
      }
      yield* drain(fh);
    }
  } finally {
    await fh?.close();
  }
}
