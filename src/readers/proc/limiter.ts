/**
 * Reads of /proc files that can block on ANOTHER process's memory map.
 *
 * /proc/<pid>/cmdline and /proc/<pid>/environ are served by access_remote_vm(),
 * which takes the target's mmap_lock: while that lock is held (a thread of the
 * target faulting on a hung NFS mount, a process stuck in mmap), the read(2) waits,
 * uninterruptibly, holding one of libuv's 4 pool threads (UV_THREADPOOL_SIZE).
 * Four such reads stop every file read of the agent. stat, status and io read
 * counters without taking mmap_lock, and readlink of ns/* only checks ptrace access,
 * so those stay on the ordinary path.
 *
 * Every such read goes through one guard for the whole process (lib/guard.ts): at most 2
 * at once (of the 4 threads), each waited for at most `readTimeoutMs`; after that the
 * caller stops waiting and reports the value unavailable, while the slot stays held (the
 * thread may be stuck for good) until the read really returns.
 */
import { constants, promises as fsp } from 'node:fs';
import { isGone } from '../hostfs/hostfs.js';
import { Guard } from '../../lib/guard.js';

export const PROC_LIMITS = {
  /** pool threads blocking /proc reads may hold at once (libuv has 4 unless UV_THREADPOOL_SIZE says otherwise) */
  maxBlockingReads: 2,
  /** how long one cmdline read is waited for (a normal one takes microseconds) */
  readTimeoutMs: 500,
  /** pids of one request whose cmdline is read; the rest are listed from stat/status alone */
  maxCmdlinePids: 256,
  /** time one request may spend on cmdline reads in all */
  cmdlineBudgetMs: 2000,
  /**
   * bytes of a cmdline returned: one page, what the kernel itself returned before
   * Linux 4.2 and about what `ps` shows on a wide terminal; the rest is cut (marked).
   */
  cmdlineMaxBytes: 4096,
} as const;

export function procGuard(max: number = PROC_LIMITS.maxBlockingReads, timeoutMs: number = PROC_LIMITS.readTimeoutMs): Guard {
  return new Guard({
    what: '/proc cmdline read',
    hangsWhen: "the process's memory map is locked, e.g. by a hung NFS mount",
    whileStuck: 'process listings show no cmdline while they are',
    max,
    timeoutMs,
  });
}

/** The agent's one guard for them (libuv's pool is per process); /readyz reports its stuck reads. */
export const procReads = procGuard();

/**
 * Read up to `maxBytes` of a file that may block in open(2) or read(2). Opened
 * without O_NONBLOCK: procfs ignores it for these files (the wait is on mmap_lock,
 * not on data), so it would protect nothing, and the guard bounds what blocks.
 * null when the process is gone.
 */
export async function readBlocking(realPath: string, maxBytes: number): Promise<{ text: string; truncated: boolean } | null> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(realPath, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if (isGone(err) || (err as NodeJS.ErrnoException).code === 'ELOOP') return null;
    throw err;
  }
  try {
    const buf = Buffer.alloc(maxBytes + 1);
    let total = 0;
    while (total < buf.length) {
      const { bytesRead } = await fh.read(buf, total, buf.length - total, null);
      if (bytesRead === 0) break;
      total += bytesRead;
    }
    const truncated = total > maxBytes;
    return { text: buf.toString('utf8', 0, Math.min(total, maxBytes)), truncated };
  } catch (err) {
    if (isGone(err)) return null;
    throw err;
  } finally {
    await fh.close();
  }
}
