/**
 * Container logs from the CRI log files: what a caller asks (PodLogs), its
 * bounds and its answer. The work is in the files beside this one: paths.ts
 * (locating and containment), read.ts (forward and tail reads), tail.ts (the
 * backward scan), gzip.ts (rotated .gz), cri-log.ts (the line format, P-line
 * joining), follow.ts (following the live file).
 */
import type { HostFs } from '../hostfs/hostfs.js';
import { MAX_LINE_BYTES, type LogEntry } from './cri-log.js';
import { followLog } from './follow.js';
import { locateByLink, previousAttemptPath } from './paths.js';
import { readForward, readTail, type LogReadContext } from './read.js';

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

/**
 * Container logs from the CRI log files. The path comes from ContainerStatus
 * (the caller asks the runtime) or, with the runtime down, from kubelet's
 * /var/log/containers/<pod>_<ns>_<container>-<id>.log symlinks, which map a
 * container id to /var/log/pods/<ns>_<pod>_<uid>/<container>/<attempt>.log.
 */
export class PodLogs {
  private readonly ctx: LogReadContext;

  constructor(fs: HostFs, limits: Partial<PodLogLimits> = {}) {
    this.ctx = { fs, limits: { ...PODLOG_LIMITS, ...limits } };
  }

  /** Find a container's log by id or unique id prefix without the runtime. */
  locateWithoutRuntime(idPrefix: string): Promise<LogLocation> {
    return locateByLink(this.ctx.fs, idPrefix);
  }

  /** The log file of the attempt before (kubelet names files <restartCount>.log). */
  previousPath(loc: LogLocation): string {
    return previousAttemptPath(loc);
  }

  /**
   * Read a container's log. With tailLines or sinceTime the files are read
   * backwards from the end (newest file first) and reading stops as soon as
   * the answer is complete; without them the live file is read forward from
   * its start. `liveEnd`: read the live file only up to this offset.
   */
  async read(logPath: string, q: PodLogQuery, liveEnd?: number): Promise<PodLogResult> {
    if (q.tailLines === null && q.sinceUs === null) return readForward(this.ctx, logPath, q, liveEnd);
    return (await readTail(this.ctx, logPath, q, liveEnd, false)).result;
  }

  /** Follow the live file by polling; handles rotation (the file replaced or truncated). */
  follow(logPath: string, q: PodLogQuery, signal: AbortSignal, pollMs = 250): AsyncGenerator<LogEntry, void, undefined> {
    return followLog(this.ctx, logPath, q, signal, pollMs);
  }
}
