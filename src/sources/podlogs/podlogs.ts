import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { createGunzip } from 'node:zlib';
import { badParameter, HOST_PATH_CODES, isSourceError, SourceError } from '../errors.js';
import { onlyMatch, prefixMatches } from '../cri/ids.js';
import { isHostPathError, type HostFs } from '../hostfs/hostfs.js';
import { ForwardLines, LineJoiner, LineParts, MAX_HEADER_BYTES, MAX_LINE_BYTES, parseCriLine, ROTATED, type LogEntry, type RawLine, type Stream } from './cri-log.js';
import { sleep } from '../../util/concurrency.js';
import { fileSource, memSource, scanBackward, TailCollector, type ByteSource } from './tail.js';

/**
 * Every read is bounded three ways: lines (tailLines), bytes of answer
 * (limitBytes, else defaultLimitBytes) and bytes read from disk (readBudgetBytes).
 * Reading is chunked and yields to the event loop between chunks, so a 64 MiB
 * file is never held, nor parsed, in one piece.
 */
export const PODLOG_LIMITS = {
  maxTailLines: 100_000,
  /** bytes of message text returned when the client sets no limitBytes */
  defaultLimitBytes: 16 * 1024 * 1024,
  /** one joined logical line (P parts + F) is kept up to this many bytes, then cut (see cri-log.ts) */
  maxLineBytes: MAX_LINE_BYTES,
  /** bytes read from disk for one answer, across the live and rotated files (kubelet keeps 5 x 10Mi by default) */
  readBudgetBytes: 128 * 1024 * 1024,
  /** one read from a file */
  chunkBytes: 64 * 1024,
  /** a rotated .gz is decompressed as a stream and given up past this much output (a gzip bomb) */
  gzipMaxOutputBytes: 128 * 1024 * 1024,
  /** of a .gz, only the newest this many decompressed bytes are kept for the tail */
  gzipTailBytes: 8 * 1024 * 1024,
};
export type PodLogLimits = typeof PODLOG_LIMITS;

export interface PodLogQuery {
  tailLines: number | null;
  sinceUs: number | null;
  stream: 'stdout' | 'stderr' | 'all';
  limitBytes: number | null;
  previous: boolean;
}

/** Where a container's log lives, as a host path, and how we found it. */
export interface LogLocation {
  containerId: string;
  /** the current attempt's file (host path), e.g. /var/log/pods/ns_name_uid/c/1.log */
  logPath: string;
  attempt: number | null;
  via: 'runtime' | 'var-log-containers';
}

export interface PodLogResult {
  file: string;
  /** the files read, oldest first */
  files: string[];
  entries: LogEntry[];
  /** the answer is not all the query asked for; truncatedBy says why */
  truncated: boolean;
  /** limitBytes: the byte bound of the answer was reached; readBudget: the bytes read from disk (or a .gz's kept tail) ran out first */
  truncatedBy: 'limitBytes' | 'readBudget' | null;
  /** lines skipped as not CRI format, lines cut at the line cap, rotated files skipped */
  warnings: string[];
}

/** container log file names under /var/log/containers: <pod>_<ns>_<container>-<64 hex>.log */
const CONTAINERS_LINK = /^(.+)_(.+)_(.+)-([0-9a-f]{64})\.log$/;

/**
 * Container logs from the CRI log files. The path comes from ContainerStatus
 * (the caller asks the runtime) or, with the runtime down, from kubelet's
 * /var/log/containers/<pod>_<ns>_<container>-<id>.log symlinks, which map a
 * container id to /var/log/pods/<ns>_<pod>_<uid>/<container>/<attempt>.log.
 */
export class PodLogs {
  private readonly limits: PodLogLimits;

  constructor(
    private readonly fs: HostFs,
    limits: Partial<PodLogLimits> = {},
  ) {
    this.limits = { ...PODLOG_LIMITS, ...limits };
  }

  /** Find a container's log by id or unique id prefix without the runtime. */
  async locateWithoutRuntime(idPrefix: string): Promise<LogLocation> {
    const dir = await this.fs.dir('/var/log/containers');
    const entries = (await this.fs.readdir(dir)) ?? [];
    const links = new Map<string, string>();
    for (const e of entries) {
      const m = CONTAINERS_LINK.exec(e.name);
      if (m) links.set(m[4]!, e.name);
    }
    const byId = ([id]: [string, string]) => id;
    const [id, name] = onlyMatch(prefixMatches(links, idPrefix, byId), byId, {
      none: () => `no container ${idPrefix} in /var/log/containers (the runtime did not answer, so only containers kubelet linked there can be found)`,
      many: (n) => `container id prefix ${idPrefix} matches ${n} log files`,
    });
    const link = await this.fs.readlink(`/var/log/containers/${name}`);
    if (!link) throw new SourceError('not_found', `/var/log/containers/${name} is not a link`);
    const target = path.posix.resolve('/var/log/containers', link);
    return { containerId: id, logPath: target, attempt: attemptOf(target), via: 'var-log-containers' };
  }

  /** The files of one attempt, oldest first: rotated (.log.<ts>[.gz]) then the live one. */
  async files(logPath: string): Promise<string[]> {
    assertPodLogPath(logPath);
    const dirPath = path.posix.dirname(logPath);
    const base = path.posix.basename(logPath);
    const dir = await this.fs.dir(dirPath);
    const rotated: Array<[string, string]> = [];
    for (const e of (await this.fs.readdir(dir)) ?? []) {
      const m = ROTATED.exec(e.name);
      if (m && m[1] === base && e.isFile()) rotated.push([m[2]!, e.name]);
    }
    rotated.sort((a, b) => a[0].localeCompare(b[0]));
    return [...rotated.map(([, n]) => path.posix.join(dirPath, n)), logPath];
  }

  /** The log file of the attempt before (kubelet names files <restartCount>.log). */
  previousPath(loc: LogLocation): string {
    const attempt = loc.attempt ?? attemptOf(loc.logPath);
    if (attempt === null) throw badParameter('previous', `previous: cannot tell the attempt from ${loc.logPath}`);
    if (attempt === 0) throw new SourceError('not_found', `previous: container ${loc.containerId.slice(0, 13)} has not restarted (attempt 0)`);
    return path.posix.join(path.posix.dirname(loc.logPath), `${attempt - 1}.log`);
  }

  /**
   * Read a container's log. With tailLines or sinceTime the files are read
   * backwards from the end (newest file first) and reading stops as soon as
   * the answer is complete; without them the live file is read forward from
   * its start. `liveEnd`: read the live file only up to this offset.
   */
  async read(logPath: string, q: PodLogQuery, liveEnd?: number): Promise<PodLogResult> {
    if (q.tailLines === null && q.sinceUs === null) return this.readForward(logPath, q, liveEnd);
    return (await this.readTail(logPath, q, liveEnd, false)).result;
  }

  /** Follow the live file by polling; handles rotation (the file replaced or truncated). */
  async *follow(logPath: string, q: PodLogQuery, signal: AbortSignal, pollMs = 250): AsyncGenerator<LogEntry, void, undefined> {
    const first = await this.openLog(logPath);
    if (!first) throw new SourceError('not_found', `log file ${logPath} does not exist`);
    let fh: fsp.FileHandle | null = first.fh;
    let ino = first.ino;
    const cap = this.lineCap(null);
    const joiner = new LineJoiner(cap);
    let lines = new ForwardLines(cap + MAX_HEADER_BYTES);
    let offset: number;
    let backlog: TailRead;
    try {
      // the backlog ends exactly where following starts: nothing lost, nothing twice. Its
      // trailing unfinished line (no newline yet) is read again by following, and its
      // unfinished P run is handed to the joiner, so following completes both.
      backlog = await this.readTail(logPath, { ...q, tailLines: q.tailLines ?? (q.sinceUs === null ? 10 : null), limitBytes: null }, first.size, true);
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
    const drain = async function* (this: PodLogs, h: fsp.FileHandle): AsyncGenerator<LogEntry> {
      // bounded chunks until the end as it is now: a container that wrote 100 MiB since the
      // last poll is read 64 KiB at a time, each chunk's lines sent before the next read
      const buf = Buffer.allocUnsafe(this.limits.chunkBytes);
      while (!signal.aborted) {
        const { bytesRead } = await h.read(buf, 0, buf.length, offset);
        if (bytesRead === 0) return;
        offset += bytesRead;
        lines.push(buf.subarray(0, bytesRead), out);
        yield* emit(out);
      }
    }.bind(this);
    try {
      // inside the try: a client that goes away during the backlog ends the generator
      // at one of these yields, and only the finally closes the file then
      for (const e of backlog.result.entries) yield e;
      while (!signal.aborted) {
        await sleep(pollMs, signal);
        if (signal.aborted) break;
        if (fh) {
          const now = await fsp.stat(await this.fs.resolve(logPath)).catch(() => null);
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
          const o = await this.openLog(logPath).catch(() => null);
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

  private lineCap(limitBytes: number | null): number {
    return Math.max(0, Math.min(this.limits.maxLineBytes, limitBytes ?? this.limits.defaultLimitBytes));
  }

  /** No tailLines, no sinceTime: the live file from its start, as kubelet reads it, until the answer's byte bound. */
  private async readForward(logPath: string, q: PodLogQuery, liveEnd?: number): Promise<PodLogResult> {
    await this.files(logPath); // the same path checks as a tail
    const o = await this.openLog(logPath);
    if (!o) throw new SourceError('not_found', `log file ${logPath} does not exist`);
    const limit = q.limitBytes ?? this.limits.defaultLimitBytes;
    const cap = this.lineCap(limit);
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
      const buf = Buffer.allocUnsafe(this.limits.chunkBytes);
      const out: RawLine[] = [];
      let pos = 0;
      let open = true;
      while (pos < end && open) {
        if (pos >= this.limits.readBudgetBytes) {
          truncatedBy = 'readBudget';
          break;
        }
        const { bytesRead } = await o.fh.read(buf, 0, Math.min(buf.length, end - pos), pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        lines.push(buf.subarray(0, bytesRead), out);
        open = take(out);
        await yieldToLoop();
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
  private async readTail(logPath: string, q: PodLogQuery, liveEnd: number | undefined, seed: boolean): Promise<TailRead> {
    const files = await this.files(logPath);
    const limit = q.limitBytes ?? this.limits.defaultLimitBytes;
    const cap = this.lineCap(limit);
    const col = new TailCollector({ want: q.tailLines, sinceUs: q.sinceUs, stream: q.stream, limit, cap, seed });
    const budget = { left: this.limits.readBudgetBytes };
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
        const g = await this.gunzipTail(f);
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
          o = await this.openLog(f);
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
        const r = await scanBackward(src, end, { chunk: this.limits.chunkBytes, maxLine: cap + MAX_HEADER_BYTES, headLost, excludeTrailing: live && seed }, budget, (batch) => {
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
    if (truncatedBy === 'readBudget') warnings.push(`stopped after reading ${this.limits.readBudgetBytes - budget.left} bytes: older lines were not read`);
    warnings.unshift(...warningsOf({ malformed: col.malformed, cut: entries.reduce((n, e) => n + (e.cut ? 1 : 0), 0) }));
    return {
      result: { file: logPath, files: used, entries, truncated: truncatedBy !== null, truncatedBy, warnings },
      seeds: col.seeds,
      resumeAt,
    };
  }

  /** A .gz decompressed as a stream with a bounded output, keeping only its newest gzipTailBytes. */
  private async gunzipTail(f: string): Promise<{ buf: Buffer; headLost: boolean } | { skip: string; stop: boolean }> {
    const name = path.posix.basename(f);
    let o: OpenLog | null;
    try {
      o = await this.openLog(f);
    } catch (err) {
      if (!isSourceError(err)) throw err;
      return { skip: `${name} skipped: ${err.message}`, stop: false };
    }
    if (!o) return { skip: `${name} vanished while reading`, stop: false };
    const ring: Buffer[] = [];
    let ringBytes = 0;
    let total = 0;
    const max = this.limits.gzipMaxOutputBytes;
    const keep = this.limits.gzipTailBytes;
    try {
      await pipeline(o.fh.createReadStream({ start: 0, autoClose: false, highWaterMark: this.limits.chunkBytes }), createGunzip(), async (chunks: AsyncIterable<Buffer>) => {
        for await (const c of chunks) {
          total += c.length;
          if (total > max) throw new GzipTooLarge();
          ring.push(c);
          ringBytes += c.length;
          while (ringBytes - ring[0]!.length >= keep) ringBytes -= ring.shift()!.length;
        }
      });
    } catch (err) {
      if (err instanceof GzipTooLarge) return { skip: `${name}: decompresses to more than ${max} bytes; it and older files were not read`, stop: true };
      return { skip: `${name} skipped: not a readable gzip file (${(err as Error).message})`, stop: false };
    } finally {
      await o.fh.close();
    }
    let buf = Buffer.concat(ring, ringBytes);
    if (buf.length > keep) buf = buf.subarray(buf.length - keep);
    return { buf, headLost: buf.length < total };
  }

  /**
   * Open a pod log file for reading through HostFs.openFile: every component
   * resolved inside the host root without following a link out, the fd checked
   * by the kernel's name for it, and the file required to lie under the host's
   * /var/log. A refusal is a path_* SourceError with its reason. null when it does not exist.
   */
  private async openLog(hostPath: string): Promise<OpenLog | null> {
    assertUnderVarLog(hostPath);
    let fh: fsp.FileHandle | null;
    try {
      fh = await this.fs.openFile(hostPath, { within: '/var/log' });
    } catch (err) {
      if (isHostPathError(err)) throw new SourceError(HOST_PATH_CODES[err.code], `refusing to read a container log: ${err.message}`, { reason: err.code });
      throw err;
    }
    if (!fh) return null;
    try {
      const st = await fh.stat();
      return { fh, size: st.size, ino: st.ino };
    } catch (err) {
      await fh.close();
      throw err;
    }
  }
}

interface OpenLog {
  fh: fsp.FileHandle;
  size: number;
  ino: number;
}

interface TailRead {
  result: PodLogResult;
  /** follow: unfinished P runs at the end of the live file, for the joiner */
  seeds: LineParts[];
  /** follow: where the live file's trailing line without a newline starts (following reads it again) */
  resumeAt: number | null;
}

class GzipTooLarge extends Error {}

function warningsOf(c: { malformed: number; cut: number }): string[] {
  const w: string[] = [];
  if (c.malformed > 0) w.push(`skipped ${c.malformed} malformed lines (not CRI log format)`);
  if (c.cut > 0) w.push(`${c.cut} lines longer than the line cap were cut (their entries carry cut: true)`);
  return w;
}

export function attemptOf(p: string): number | null {
  const m = /\/(\d+)\.log$/.exec(p);
  return m ? Number(m[1]) : null;
}

/** Container logs live under /var/log (kubelet's podLogsRootDirectory); anything else is refused. */
function assertPodLogPath(p: string): void {
  assertUnderVarLog(p);
  if (!path.posix.resolve('/', p).endsWith('.log')) throw new SourceError('path_outside_root', `refusing to read ${p}: container logs live under /var/log and end in .log`);
}

function assertUnderVarLog(p: string): void {
  if (!path.posix.resolve('/', p).startsWith('/var/log/')) throw new SourceError('path_outside_root', `refusing to read ${p}: container logs live under /var/log and end in .log`);
}
