import { constants, promises as fsp, type Dirent, type StatsFs } from 'node:fs';
import path from 'node:path';

const MAX_SYMLINKS = 40; // as the kernel's own limit on nested links (ELOOP)
const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;

/** Errors meaning "this thing is not there (any more)": a vanished pid or cgroup. */
const GONE = new Set(['ENOENT', 'ENOTDIR', 'ESRCH', 'ENODEV', 'ENXIO']);
export const isGone = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && GONE.has((err as NodeJS.ErrnoException).code ?? '');

/**
 * A directory already resolved inside the host root. Files directly in it are
 * opened with O_NOFOLLOW, so a directory resolved once can be read many times
 * without walking its path again (cgroup trees hold thousands of them).
 */
export interface ResolvedDir {
  readonly hostPath: string; // as the host sees it, e.g. /sys/fs/cgroup/kubepods.slice
  readonly realPath: string; // where we read it, under the host root
}

/**
 * Read-only access to the host's filesystem mounted at `root`, resolving every
 * path the way securejoin does: `..` stops at the root and symlinks are
 * followed relative to the root, so /var/run -> /run works on the host while a
 * link to /etc/shadow of the agent's own container, or ../../.., stays inside.
 */
export class HostFs {
  readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  /** Map a host path to a real path under the root; never leaves the root. */
  async resolve(hostPath: string): Promise<string> {
    assertPathText(hostPath);
    if (this.root === '/') return path.resolve('/', hostPath);
    const pending = hostPath.split('/').filter((p) => p !== '' && p !== '.');
    const done: string[] = [];
    let links = 0;
    while (pending.length > 0) {
      const part = pending.shift()!;
      if (part === '..') {
        done.pop();
        continue;
      }
      const candidate = path.join(this.root, ...done, part);
      let target: string | undefined;
      try {
        const st = await fsp.lstat(candidate);
        if (st.isSymbolicLink()) target = await fsp.readlink(candidate);
      } catch (err) {
        if (!isGone(err)) throw err;
        // A missing component: keep the lexical rest, the caller's open gets ENOENT.
      }
      if (target === undefined) {
        done.push(part);
        continue;
      }
      if (++links > MAX_SYMLINKS) throw Object.assign(new Error(`too many symlinks in ${hostPath}`), { code: 'ELOOP' });
      if (target.startsWith('/')) done.length = 0;
      pending.unshift(...target.split('/').filter((p) => p !== '' && p !== '.'));
    }
    return path.join(this.root, ...done);
  }

  async dir(hostPath: string): Promise<ResolvedDir> {
    return { hostPath: path.posix.resolve('/', hostPath), realPath: await this.resolve(hostPath) };
  }

  /** A child of a resolved directory that readdir reported as a real directory (not a link). */
  child(dir: ResolvedDir, name: string): ResolvedDir {
    assertName(name);
    return { hostPath: path.posix.join(dir.hostPath, name), realPath: path.join(dir.realPath, name) };
  }

  /** Read a file at a host path; null when it does not exist (a controller not enabled, a pid gone). */
  async readFile(hostPath: string, maxBytes = DEFAULT_MAX_BYTES): Promise<string | null> {
    return readBounded(await this.resolve(hostPath), maxBytes, false);
  }

  /** Read a file directly inside a resolved directory; refuses to follow a link as the last step. */
  async readIn(dir: ResolvedDir, name: string, maxBytes = DEFAULT_MAX_BYTES): Promise<string | null> {
    assertName(name);
    return readBounded(path.join(dir.realPath, name), maxBytes, true);
  }

  async readdir(dir: ResolvedDir): Promise<Dirent[] | null> {
    try {
      return await fsp.readdir(dir.realPath, { withFileTypes: true });
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    }
  }

  /** readlink of the last component itself (e.g. /proc/<pid>/ns/net -> "net:[4026531840]"). */
  async readlink(hostPath: string): Promise<string | null> {
    const parent = await this.resolve(path.posix.dirname(path.posix.resolve('/', hostPath)));
    try {
      return await fsp.readlink(path.join(parent, path.posix.basename(hostPath)));
    } catch (err) {
      if (isGone(err) || (err as NodeJS.ErrnoException).code === 'EINVAL') return null;
      throw err;
    }
  }

  async statfs(hostPath: string): Promise<StatsFs | null> {
    try {
      return await fsp.statfs(await this.resolve(hostPath));
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    }
  }

  async exists(hostPath: string): Promise<boolean> {
    try {
      await fsp.access(await this.resolve(hostPath));
      return true;
    } catch {
      return false;
    }
  }
}

async function readBounded(realPath: string, maxBytes: number, noFollow: boolean): Promise<string | null> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(realPath, constants.O_RDONLY | constants.O_NONBLOCK | (noFollow ? constants.O_NOFOLLOW : 0));
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  }
  try {
    // Files under /proc and /sys report size 0, so read in chunks up to the bound.
    const chunks: Buffer[] = [];
    let total = 0;
    while (total < maxBytes) {
      const buf = Buffer.allocUnsafe(Math.min(65536, maxBytes - total));
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      chunks.push(buf.subarray(0, bytesRead));
      total += bytesRead;
    }
    return Buffer.concat(chunks, total).toString('utf8');
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  } finally {
    await fh.close();
  }
}

function assertPathText(p: string): void {
  if (p.includes('\0')) throw Object.assign(new Error('NUL byte in path'), { code: 'EINVAL' });
}

function assertName(name: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw Object.assign(new Error(`not a plain file name: ${JSON.stringify(name)}`), { code: 'EINVAL' });
  }
}
