/**
 * Where a container's log files are, and opening them safely: the kubelet link
 * under /var/log/containers (the runtime down), an attempt's rotated files, the
 * attempt before, and every open contained in the host's /var/log.
 */
import type { promises as fsp } from 'node:fs';
import path from 'node:path';
import { badParameter, HOST_PATH_CODES, SourceError } from '../errors.js';
import { onlyMatch, prefixMatches } from '../cri/ids.js';
import { isHostPathError, type HostFs } from '../hostfs/hostfs.js';
import { ROTATED } from './cri-log.js';
import type { LogLocation } from './podlogs.js';

/** container log file names under /var/log/containers: <pod>_<ns>_<container>-<64 hex>.log */
const CONTAINERS_LINK = /^(.+)_(.+)_(.+)-([0-9a-f]{64})\.log$/;

/** A container's log by id or unique id prefix, through kubelet's /var/log/containers links (no runtime needed). */
export async function locateByLink(fs: HostFs, idPrefix: string): Promise<LogLocation> {
  const dir = await fs.dir('/var/log/containers');
  const entries = (await fs.readdir(dir)) ?? [];
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
  const link = await fs.readlink(`/var/log/containers/${name}`);
  if (!link) throw new SourceError('not_found', `/var/log/containers/${name} is not a link`);
  const target = path.posix.resolve('/var/log/containers', link);
  return { containerId: id, logPath: target, attempt: attemptOf(target), via: 'var-log-containers' };
}

/** The files of one attempt, oldest first: rotated (.log.<ts>[.gz]) then the live one. */
export async function attemptFiles(fs: HostFs, logPath: string): Promise<string[]> {
  assertPodLogPath(logPath);
  const dirPath = path.posix.dirname(logPath);
  const base = path.posix.basename(logPath);
  const dir = await fs.dir(dirPath);
  const rotated: Array<[string, string]> = [];
  for (const e of (await fs.readdir(dir)) ?? []) {
    const m = ROTATED.exec(e.name);
    if (m && m[1] === base && e.isFile()) rotated.push([m[2]!, e.name]);
  }
  rotated.sort((a, b) => a[0].localeCompare(b[0]));
  return [...rotated.map(([, n]) => path.posix.join(dirPath, n)), logPath];
}

/** The log file of the attempt before (kubelet names files <restartCount>.log). */
export function previousAttemptPath(loc: LogLocation): string {
  const attempt = loc.attempt ?? attemptOf(loc.logPath);
  if (attempt === null) throw badParameter('previous', `previous: cannot tell the attempt from ${loc.logPath}`);
  if (attempt === 0) throw new SourceError('not_found', `previous: container ${loc.containerId.slice(0, 13)} has not restarted (attempt 0)`);
  return path.posix.join(path.posix.dirname(loc.logPath), `${attempt - 1}.log`);
}

export interface OpenLog {
  fh: fsp.FileHandle;
  size: number;
  ino: number;
}

/**
 * Open a pod log file for reading through HostFs.openFile: every component
 * resolved inside the host root without following a link out, the fd checked
 * by the kernel's name for it, and the file required to lie under the host's
 * /var/log. A refusal is a path_* SourceError with its reason. null when it does not exist.
 */
export async function openLog(fs: HostFs, hostPath: string): Promise<OpenLog | null> {
  assertUnderVarLog(hostPath);
  let fh: fsp.FileHandle | null;
  try {
    fh = await fs.openFile(hostPath, { within: '/var/log' });
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

function attemptOf(p: string): number | null {
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
