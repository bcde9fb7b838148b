import { constants, promises as fsp } from 'node:fs';
import path from 'node:path';
import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import { ambiguous, badRequest, notFound } from '../../errors.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { parseRfc3339Micros } from '../journal/time.js';
import { LineJoiner, parseCriLog, parseCriLogLine, ROTATED, type LogEntry } from './cri-log.js';
import { sleep } from '../../util/concurrency.js';

const gunzipAsync = promisify(gunzip);

export const PODLOG_LIMITS = {
  maxTailLines: 100_000,
  /** bytes read from one file (kubelet rotates at containerLogMaxSize, 10Mi by default) */
  maxFileBytes: 64 * 1024 * 1024,
  /** bytes returned when the client sets no limitBytes */
  defaultLimitBytes: 16 * 1024 * 1024,
} as const;

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
  files: string[];
  entries: LogEntry[];
  truncated: boolean;
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
  constructor(private readonly fs: HostFs) {}

  /** Find a container's log by id or unique id prefix without the runtime. */
  async locateWithoutRuntime(idPrefix: string): Promise<LogLocation> {
    const dir = await this.fs.dir('/var/log/containers');
    const entries = (await this.fs.readdir(dir)) ?? [];
    const hits = new Map<string, string>();
    for (const e of entries) {
      const m = CONTAINERS_LINK.exec(e.name);
      if (m && m[4]!.startsWith(idPrefix)) hits.set(m[4]!, e.name);
    }
    if (hits.size === 0) throw notFound(`no container ${idPrefix} in /var/log/containers (the runtime did not answer, so only containers kubelet linked there can be found)`);
    if (hits.size > 1) throw ambiguous(`container id prefix ${idPrefix} matches ${hits.size} log files`, [...hits.keys()]);
    const [id, name] = [...hits.entries()][0]!;
    const link = await this.fs.readlink(`/var/log/containers/${name}`);
    if (!link) throw notFound(`/var/log/containers/${name} is not a link`);
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
    if (attempt === null) throw badRequest(`previous: cannot tell the attempt from ${loc.logPath}`, { param: 'previous' });
    if (attempt === 0) throw notFound(`previous: container ${loc.containerId.slice(0, 13)} has not restarted (attempt 0)`);
    return path.posix.join(path.posix.dirname(loc.logPath), `${attempt - 1}.log`);
  }

  /** `liveEnd`: read the live file only up to this offset (follow starts exactly there). */
  async read(logPath: string, q: PodLogQuery, liveEnd?: number): Promise<PodLogResult> {
    const files = await this.files(logPath);
    const need = q.tailLines;
    let entries: LogEntry[] = [];
    const used: string[] = [];
    // newest file first; go back into rotated files while the tail or sinceTime reaches into them
    for (let i = files.length - 1; i >= 0; i--) {
      const f = files[i]!;
      const text = await this.readText(f, i === files.length - 1 ? liveEnd : undefined);
      if (text === null) {
        if (i === files.length - 1) throw notFound(`log file ${f} does not exist`);
        continue;
      }
      used.unshift(f);
      let got = parseCriLog(text, i === files.length - 1);
      if (q.stream !== 'all') got = got.filter((e) => e.stream === q.stream);
      const firstUs = got.length ? parseRfc3339Micros(got[0]!.time) : null;
      if (q.sinceUs !== null) got = got.filter((e) => (parseRfc3339Micros(e.time) ?? 0) >= q.sinceUs!);
      entries = [...got, ...entries];
      const olderNeeded =
        q.sinceUs !== null ? firstUs !== null && firstUs >= q.sinceUs && (need === null || entries.length < need) : need !== null && entries.length < need;
      if (!olderNeeded) break;
    }
    if (need !== null) entries = need === 0 ? [] : entries.slice(-need);
    const limit = q.limitBytes ?? PODLOG_LIMITS.defaultLimitBytes;
    let bytes = 0;
    let truncated = false;
    const out: LogEntry[] = [];
    for (const e of entries) {
      bytes += Buffer.byteLength(e.message) + 1;
      if (bytes > limit) {
        truncated = true;
        break;
      }
      out.push(e);
    }
    return { file: logPath, files: used, entries: out, truncated };
  }

  /** Follow the live file by polling; handles rotation (the file replaced or truncated). */
  async *follow(logPath: string, q: PodLogQuery, signal: AbortSignal, pollMs = 250): AsyncGenerator<LogEntry, void, undefined> {
    assertPodLogPath(logPath);
    const real = await this.fs.resolve(logPath);
    let fh = await open(real).catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ENOENT' ? notFound(`log file ${logPath} does not exist`) : err;
    });
    let st = await fh.stat();
    let offset = st.size;
    // the backlog ends exactly where following starts: nothing lost, nothing twice
    const start = await this.read(logPath, { ...q, tailLines: q.tailLines ?? (q.sinceUs === null ? 10 : null), limitBytes: null }, offset).catch(async (err: unknown) => {
      await fh.close();
      throw err;
    });
    let partial = '';
    const joiner = new LineJoiner();
    try {
      // inside the try: a client that goes away during the backlog ends the generator
      // at one of these yields, and only the finally closes the file then
      for (const e of start.entries) yield e;
      while (!signal.aborted) {
        await sleep(pollMs, signal);
        if (signal.aborted) break;
        const now = await fsp.stat(real).catch(() => null);
        if (now && (now.ino !== st.ino || now.size < offset)) {
          // rotated: finish the old file, then start the new one from its beginning
          const rest = await readFrom(fh, offset);
          if (now.ino !== st.ino) {
            await fh.close();
            fh = await open(real);
          }
          st = await fh.stat();
          offset = 0;
          partial += rest;
        }
        const more = await readFrom(fh, offset);
        offset += Buffer.byteLength(more);
        const text = partial + more;
        const nl = text.lastIndexOf('\n');
        if (nl < 0) {
          partial = text;
          continue;
        }
        partial = text.slice(nl + 1);
        for (const line of text.slice(0, nl).split('\n')) {
          const l = parseCriLogLine(line);
          if (!l || (q.stream !== 'all' && l.stream !== q.stream)) continue;
          const e = joiner.push(l);
          if (e) yield e;
        }
      }
    } finally {
      await fh.close();
    }
  }

  private async readText(hostPath: string, end?: number): Promise<string | null> {
    const real = await this.fs.resolve(hostPath);
    let fh: fsp.FileHandle;
    try {
      fh = await open(real);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw badRequest(`${hostPath} is not a regular file`);
      const size = end === undefined ? st.size : Math.min(end, st.size);
      const max = PODLOG_LIMITS.maxFileBytes;
      const from = !hostPath.endsWith('.gz') && size > max ? size - max : 0;
      const len = Math.min(size, max);
      const buf = Buffer.allocUnsafe(len);
      const { bytesRead } = await fh.read(buf, 0, len, from);
      let data = buf.subarray(0, bytesRead);
      if (hostPath.endsWith('.gz')) data = await gunzipAsync(data, { maxOutputLength: max });
      let text = data.toString('utf8');
      if (from > 0) text = text.slice(text.indexOf('\n') + 1); // drop the cut first line
      return text;
    } finally {
      await fh.close();
    }
  }
}

async function open(real: string): Promise<fsp.FileHandle> {
  return fsp.open(real, constants.O_RDONLY | constants.O_NONBLOCK);
}

async function readFrom(fh: fsp.FileHandle, offset: number): Promise<string> {
  const st = await fh.stat();
  const len = Math.min(st.size - offset, PODLOG_LIMITS.maxFileBytes);
  if (len <= 0) return '';
  const buf = Buffer.allocUnsafe(len);
  const { bytesRead } = await fh.read(buf, 0, len, offset);
  return buf.toString('utf8', 0, bytesRead);
}

export function attemptOf(p: string): number | null {
  const m = /\/(\d+)\.log$/.exec(p);
  return m ? Number(m[1]) : null;
}

/** Container logs live under /var/log (kubelet's podLogsRootDirectory); anything else is refused. */
function assertPodLogPath(p: string): void {
  const norm = path.posix.resolve('/', p);
  if (!norm.startsWith('/var/log/') || !norm.endsWith('.log')) throw badRequest(`refusing to read ${p}: container logs live under /var/log and end in .log`);
}

