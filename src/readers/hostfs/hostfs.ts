import { constants, promises as fsp, realpathSync, type Dirent, type StatsFs } from 'node:fs';
import path from 'node:path';
import { assertName, assertPathText, errCode, escapes, HostPathError, isGone, judgeFdPath } from './host-path.js';

// the refusals HostFs throws, for its callers to tell apart
export { type HostPathCode, isGone, isHostPathError, judgeFdPath } from './host-path.js';

const MAX_SYMLINKS = 40; // as the kernel's own limit on nested links (ELOOP)
const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;
/** path components walked for one path, links expanded included */
const MAX_STEPS = 4096;
/**
 * Linux O_PATH (Node has no constant for it): an fd that names a file without
 * opening it, so walking a path never runs a device's open (a /dev/watchdog
 * reached through a planted link would arm it) and a link can be looked at
 * without being followed. libuv adds O_CLOEXEC to every open itself.
 */
const O_PATH = 0o10000000;
const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;
/** The agent's own /proc (never the host root's): the kernel's name for one of our fds. */
const fdPath = (fd: number) => `/proc/self/fd/${fd}`;

export interface ResolvedDir {
  readonly hostPath: string; // as the host sees it, e.g. /sys/fs/cgroup/kubepods.slice
  readonly realPath: string; // where we read it, under the host root
}

/** `name` (a plain name) under the normalized path `dir`. */
const under = (dir: string, name: string) => (dir.endsWith('/') ? `${dir}${name}` : `${dir}/${name}`);

/**
 * Read-only access to the host's filesystem mounted at `root` (also '/'),
 * resolving every path the way securejoin does: `..` stops at the root and
 * symlinks are followed relative to the root, so /var/run -> /run works on the
 * host while a link to /etc/shadow of the agent's own container, or ../../..,
 * stays inside. Node has no openat/openat2, so every reader then checks the fd
 * it got against the agent's own /proc/self/fd (see verifyFd): a link swapped in
 * after the walk is refused (EXDEV) instead of followed. `within` (openFile,
 * dir) confines a read to a subtree, e.g. /var/log, which matters most for '/'.
 */
export class HostFs {
  readonly root: string;
  /** The root as the kernel names it (realpath), so paths we build compare equal to /proc/self/fd answers. */
  private rootReal: string | undefined;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  private realRoot(): string {
    if (this.rootReal === undefined) {
      try {
        this.rootReal = realpathSync(this.root);
      } catch {
        return this.root; // not there (yet): every read below it is ENOENT anyway
      }
    }
    return this.rootReal;
  }

  /**
   * Map a host path to a path under the root, securejoin-style, for every root
   * including '/': `..` stops at the root and each link is expanded relative to
   * it. The answer holds no symlink at the moment of the walk; readers open it
   * and then ask the kernel where the fd really is (verifyFd), because a link
   * can be swapped in between.
   */
  async resolve(hostPath: string): Promise<string> {
    assertPathText(hostPath);
    const root = this.realRoot();
    const pending = hostPath.split('/').filter((p) => p !== '' && p !== '.');
    const done: string[] = [];
    let links = 0;
    let steps = 0;
    while (pending.length > 0) {
      // link targets are up to 4 KiB each; bound the walk, not only the link count
      if (++steps > MAX_STEPS) throw new HostPathError('ELOOP', hostPath, `${hostPath}: path too long after expanding links`);
      const part = pending.shift()!;
      if (part === '..') {
        done.pop();
        continue;
      }
      const candidate = path.join(root, ...done, part);
      let target: string | undefined;
      try {
        const st = await fsp.lstat(candidate);
        if (st.isSymbolicLink()) target = await fsp.readlink(candidate);
      } catch (err) {
        if (!isGone(err) && errCode(err) !== 'EINVAL') throw err;
        // A missing component (or a link replaced by a file between lstat and readlink):
        // keep the lexical rest, the caller's open gets ENOENT or finds the mismatch.
      }
      if (target === undefined) {
        done.push(part);
        continue;
      }
      if (++links > MAX_SYMLINKS) throw new HostPathError('ELOOP', hostPath, `too many symlinks in ${hostPath}`);
      if (target.startsWith('/')) done.length = 0;
      pending.unshift(...target.split('/').filter((p) => p !== '' && p !== '.'));
    }
    return path.join(root, ...done);
  }

  /**
   * The kernel's own answer for an open fd (readlink of the agent's /proc/self/fd/N,
   * immune to any swap) must be exactly the link-free path we resolved: then the
   * object is the one at that path inside the root. 'gone' when it was unlinked.
   */
  private async verifyFd(fd: number, expected: string, hostPath: string): Promise<'ok' | 'gone'> {
    return judgeFdPath(await fsp.readlink(fdPath(fd)), expected, hostPath);
  }

  /**
   * Open a regular file for reading, resolved inside the host root and, with
   * `within` (a host path such as /var/log), inside that subtree too. Every
   * component is resolved without following a link out; the file is first
   * opened O_PATH|O_NOFOLLOW (no device open, no link followed), checked by the
   * kernel's name for the fd, then reopened through that fd, so a link swapped
   * in at any step is refused before a byte is read.
   * null: it does not exist (or vanished meanwhile). Throws a HostPathError:
   * EXDEV when it leads outside the root or `within`, EFTYPE when it is not a
   * regular file, ELOOP for link loops or a link swapped in while opening.
   * The caller closes the handle.
   */
  async openFile(hostPath: string, opts: { within?: string } = {}): Promise<fsp.FileHandle | null> {
    const real = await this.resolve(hostPath);
    if (opts.within !== undefined) {
      const base = await this.resolve(opts.within);
      if (!real.startsWith(base === '/' ? '/' : `${base}/`)) throw escapes(hostPath, opts.within);
    }
    // checked before anything is opened for reading: a swapped intermediate link lands elsewhere
    const pathFd = await this.openVerified(real, hostPath, O_PATH | O_NOFOLLOW);
    if (pathFd === null) return null;
    try {
      const st = await pathFd.stat();
      if (st.isSymbolicLink()) throw new HostPathError('ELOOP', hostPath, `${hostPath}: a link appeared while it was being opened`);
      if (!st.isFile()) throw new HostPathError('EFTYPE', hostPath, `${hostPath} is not a regular file`);
      // the same inode, reopened for reading through the verified fd
      return await fsp.open(fdPath(pathFd.fd), O_RDONLY | O_NONBLOCK);
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    } finally {
      await pathFd.close();
    }
  }

  /**
   * Resolve a directory once, checked by the kernel's name for an O_PATH fd of
   * it; reads in it check again by fd (readIn each file, readdir the directory,
   * readFilesInSync once a batch), so a walk of thousands of cgroup files never
   * resolves a path twice. A directory that does not exist (yet) still gives a
   * ResolvedDir: every read in it answers null. Throws EXDEV when it leads
   * outside the root or `within`.
   */
  async dir(hostPath: string, opts: { within?: string } = {}): Promise<ResolvedDir> {
    const real = await this.resolve(hostPath);
    if (opts.within !== undefined) {
      const base = await this.resolve(opts.within);
      if (real !== base && !real.startsWith(base === '/' ? '/' : `${base}/`)) throw escapes(hostPath, opts.within);
    }
    const fh = await this.openVerified(real, hostPath, O_PATH | O_DIRECTORY | O_NOFOLLOW);
    await fh?.close();
    return { hostPath: path.posix.resolve('/', hostPath), realPath: real };
  }

  /** A child of a resolved directory that readdir reported as a real directory (not a link); checked when read. */
  child(dir: ResolvedDir, name: string): ResolvedDir {
    assertName(name);
    // a plain name under a normalized path: joined without path.join's normalizing pass,
    // which costs ~3 KiB of garbage per call (a kubepods walk makes one per cgroup)
    return { hostPath: under(dir.hostPath, name), realPath: under(dir.realPath, name) };
  }

  /** Read a regular file at a host path; null when it does not exist (a controller not enabled, a pid gone). */
  async readFile(hostPath: string, maxBytes = DEFAULT_MAX_BYTES): Promise<string | null> {
    const fh = await this.openFile(hostPath);
    return fh === null ? null : readBounded(fh, maxBytes);
  }

  /**
   * Read a file directly inside a resolved directory; a link as the last step is
   * refused (ELOOP), and the fd is checked to be exactly that file before a byte is
   * read. Meant for kernel pseudo-filesystems (cgroupfs, procfs), whose directories
   * a tenant cannot turn into links: trees a tenant writes go through openFile.
   */
  async readIn(dir: ResolvedDir, name: string, maxBytes = DEFAULT_MAX_BYTES): Promise<string | null> {
    assertName(name);
    const real = path.join(dir.realPath, name);
    const fh = await this.openVerified(real, `${dir.hostPath}/${name}`, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
    return fh === null ? null : readBounded(fh, maxBytes);
  }

  /** Entries of a resolved directory, listed through a verified fd of it; null when it is gone. */
  async readdir(dir: ResolvedDir): Promise<Dirent[] | null> {
    const fh = await this.openVerified(dir.realPath, dir.hostPath, O_PATH | O_DIRECTORY | O_NOFOLLOW);
    if (fh === null) return null;
    try {
      return await fsp.readdir(fdPath(fh.fd), { withFileTypes: true });
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    } finally {
      await fh.close();
    }
  }

  /** readlink of the last component itself (e.g. /proc/<pid>/ns/net -> "net:[4026531840]"), looked up in a verified parent. */
  async readlink(hostPath: string): Promise<string | null> {
    assertPathText(hostPath);
    const abs = path.posix.resolve('/', hostPath);
    const base = path.posix.basename(abs);
    if (base === '') return null; // the root is no link
    const parent = await this.openVerified(await this.resolve(path.posix.dirname(abs)), hostPath, O_PATH | O_DIRECTORY | O_NOFOLLOW);
    if (parent === null) return null;
    try {
      return await fsp.readlink(`${fdPath(parent.fd)}/${base}`);
    } catch (err) {
      if (isGone(err) || errCode(err) === 'EINVAL') return null;
      throw err;
    } finally {
      await parent.close();
    }
  }

  /**
   * statfs through a verified O_PATH fd. A statfs of a hung mount (NFS, FUSE) never
   * returns and holds a libuv thread for good: callers that must survive that need
   * their own deadline; this only keeps the answer inside the root.
   */
  async statfs(hostPath: string): Promise<StatsFs | null> {
    const fh = await this.openVerified(await this.resolve(hostPath), hostPath, O_PATH | O_NOFOLLOW);
    if (fh === null) return null;
    try {
      return await fsp.statfs(fdPath(fh.fd));
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    } finally {
      await fh.close();
    }
  }

  /** Whether anything (not a dangling link) is at the host path inside the root. */
  async exists(hostPath: string): Promise<boolean> {
    try {
      const fh = await this.openVerified(await this.resolve(hostPath), hostPath, O_PATH | O_NOFOLLOW);
      await fh?.close();
      return fh !== null;
    } catch {
      return false;
    }
  }

  /**
   * Open a resolved, link-free path with O_NOFOLLOW in `flags` and check the kernel's
   * name for the fd; null when it is not there (or was unlinked meanwhile).
   */
  private async openVerified(real: string, hostPath: string, flags: number): Promise<fsp.FileHandle | null> {
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(real, flags);
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    }
    try {
      if ((await this.verifyFd(fh.fd, real, hostPath)) === 'ok') return fh;
    } catch (err) {
      await fh.close();
      throw err;
    }
    await fh.close();
    return null;
  }
}

/** Read an open file to EOF or maxBytes, then close it. */
async function readBounded(fh: fsp.FileHandle, maxBytes: number): Promise<string | null> {
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
