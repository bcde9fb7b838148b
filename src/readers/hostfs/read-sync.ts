import { closeSync, constants, openSync, readdirSync, readlinkSync, readSync, type Dirent } from 'node:fs';
import { isGone, judgeFdPath, type ResolvedDir } from './hostfs.js';
import { assertName } from './host-path.js';

const O_PATH = 0o10000000; // see hostfs.ts

const BUF = Buffer.allocUnsafe(64 * 1024);

/**
 * Read several small files directly inside a resolved directory, synchronously,
 * each opened with O_NOFOLLOW (a planted symlink reads as absent, as with
 * readInNoLink). Only for kernel pseudo-filesystems (cgroupfs, procfs), whose
 * reads never wait on a disk: there a synchronous open/read/close costs a few
 * microseconds, while the same read through libuv's 4-thread pool costs several
 * round trips; on a 1,000-container node that is the difference between 0.5 s
 * and 5 s for /v1/cgroups. Callers keep each batch small (one cgroup) and yield
 * to the event loop between batches.
 *
 * Containment: the first file of a batch that opens is checked by the kernel's name for
 * its fd, which must be exactly <dir.realPath>/<name> (a link swapped into any component
 * fails the batch with EXDEV before a byte is read; a child() never resolved is checked
 * here too). One readlink a batch, where checking the directory first costs three
 * syscalls (open O_PATH, readlink, close): on a 1,000-container node the /metrics
 * scrape checks ~2,500 directories, most holding one or a few files. The batch's other
 * files are then opened by path with O_NOFOLLOW, not through a verified fd
 * (/proc/self/fd/<fd>/<name>, the openat Node lacks): that lookup cost +32%. So a
 * directory swapped for a link in the microseconds between the first open and the next
 * is not caught; cgroupfs and procfs, the only trees this is for, cannot hold such a link
 * (a tenant can make and remove cgroups, never links), and the names read are fixed
 * (cpu.stat, stat), never a device a swapped link could reach. Trees a tenant writes are
 * read with HostFs.openFile.
 *
 * Missing files (or a directory that vanished) give null; each file is read to
 * EOF or to `maxBytes`, whichever comes first.
 */
export function readFilesInSync(dir: ResolvedDir, names: readonly string[], maxBytes = BUF.length): (string | null)[] {
  const out: (string | null)[] = names.map(() => null);
  scanFilesInSync(dir, names, maxBytes, (i, buf, len) => {
    out[i] = buf.toString('utf8', 0, len);
  });
  return out;
}

/**
 * The files of readFilesInSync, each handed to `visit` in the one read buffer as it
 * is (bytes 0 to `len`), so a caller that parses them makes no string of its own:
 * `buf` is overwritten by the next file, `visit` keeps numbers, never the buffer.
 * Missing files are not visited; false when the directory itself is gone.
 */
export function scanFilesInSync(dir: ResolvedDir, names: readonly string[], maxBytes: number, visit: (index: number, buf: Buffer, len: number) => void): boolean {
  const max = Math.min(maxBytes, BUF.length);
  for (const name of names) assertName(name);
  let checked = false;
  for (let i = 0; i < names.length; i++) {
    const len = readOne(`${dir.realPath}/${names[i]}`, max, checked ? null : `${dir.hostPath}/${names[i]}`);
    if (len < 0) continue;
    checked = true;
    visit(i, BUF, len);
  }
  if (checked) return true;
  // no file opened: whether the directory itself is there
  const dirFd = openCheckedDir(dir);
  if (dirFd === null) return false;
  closeSync(dirFd);
  return true;
}

/**
 * The directory opened O_PATH|O_NOFOLLOW and the kernel's name for that fd checked against
 * dir.realPath (a link swapped into any component fails with EXDEV); null when it is gone.
 * The caller closes the fd.
 */
function openCheckedDir(dir: ResolvedDir): number | null {
  let dirFd: number;
  try {
    dirFd = openSync(dir.realPath, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  }
  try {
    if (judgeFdPath(readlinkSync(`/proc/self/fd/${dirFd}`), dir.realPath, dir.hostPath) === 'ok') return dirFd;
  } catch (err) {
    closeSync(dirFd);
    if (isGone(err)) return null;
    throw err;
  }
  closeSync(dirFd);
  return null;
}

/**
 * The file's length in BUF, -1 when it is missing (or a link: O_NOFOLLOW). With `checkAs`
 * (its host path, for the refusal), the kernel's name for the fd must be `at` before a byte is
 * read: a link swapped into any component throws EXDEV, a file unlinked meanwhile is missing.
 */
function readOne(at: string, max: number, checkAs: string | null): number {
  let fd: number;
  try {
    fd = openSync(at, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (err) {
    if (isGone(err) || (err as NodeJS.ErrnoException).code === 'ELOOP') return -1;
    throw err;
  }
  try {
    if (checkAs !== null && judgeFdPath(readlinkSync(`/proc/self/fd/${fd}`), at, checkAs) === 'gone') return -1;
    let total = 0;
    while (total < max) {
      const want = max - total;
      const n = readSync(fd, BUF, total, want, null);
      total += n;
      // A short read is the end: kernfs/seq_file and tmpfs return all they have up to the
      // count asked, so a file smaller than the buffer needs no second read(2) to see EOF
      // (on a 1,000-container node that is 12,000 syscalls less per /metrics scrape).
      if (n < want) break;
    }
    return total;
  } catch (err) {
    if (isGone(err)) return -1;
    throw err;
  } finally {
    closeSync(fd);
  }
}

/**
 * HostFs.readdir synchronously, for the same kernel pseudo-filesystems: the directory opened
 * O_PATH|O_NOFOLLOW, the kernel's name for that fd checked against dir.realPath, then listed
 * through the fd. Four syscalls, no round trip through libuv's pool (the async form is four
 * of those per directory). null when the directory is gone; a refusal (EXDEV) or any other
 * error is thrown, as HostFs.readdir does. Callers yield between directories.
 */
export function readdirInSync(dir: ResolvedDir): Dirent[] | null {
  const dirFd = openCheckedDir(dir);
  if (dirFd === null) return null;
  try {
    return readdirSync(`/proc/self/fd/${dirFd}`, { withFileTypes: true });
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  } finally {
    closeSync(dirFd);
  }
}
