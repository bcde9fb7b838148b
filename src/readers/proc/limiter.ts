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
 * Every such read goes through one limiter for the whole process (the thread pool is
 * process-wide): at most `max` at once (2 of the 4 threads), each waited for at most
 * `timeoutMs`; after that the caller stops waiting and reports the value unavailable,
 * while the slot stays counted as busy (the thread may be stuck for good) until the
 * read really returns. /readyz reports the stuck reads.
 */
import { constants, promises as fsp } from 'node:fs';
import { isGone } from '../hostfs/hostfs.js';
import { Slots } from '../../lib/slots.js';

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

export type Limited<T> = { ok: true; value: T } | { ok: false; reason: string };

export class BlockingReadLimiter {
  /** reads past their timeout whose thread has not come back */
  stuck = 0;
  /** reads that ever timed out (for /readyz) */
  timedOut = 0;
  private readonly slots: Slots;

  constructor(
    readonly max: number,
    readonly timeoutMs: number,
  ) {
    this.slots = new Slots(max);
  }

  /** slots held: reads running, including those past their timeout */
  get busy(): number {
    return this.slots.busy;
  }

  /**
   * Run `read` in a slot: wait for a free slot and for the read, together at most
   * `timeoutMs`. A read that is late keeps its slot until it returns.
   */
  async run<T>(read: () => Promise<T>, signal?: AbortSignal): Promise<Limited<T>> {
    if (this.stuck >= this.max) return { ok: false, reason: `all ${this.max} slots for /proc reads are held by reads stuck past ${this.timeoutMs} ms` };
    const until = Date.now() + this.timeoutMs;
    if (!(await this.slots.acquire(until, signal))) {
      return { ok: false, reason: signal?.aborted ? 'the request ended' : `no free slot for /proc reads within ${this.timeoutMs} ms (${this.stuck} stuck)` };
    }
    const op = read();
    let late = false;
    const done = op.then(
      (value) => ({ ok: true as const, value }),
      (err: Error) => ({ ok: false as const, reason: (err as NodeJS.ErrnoException).code ?? err.message }),
    );
    void done.then(() => {
      if (late) this.stuck--;
      this.slots.release();
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<Limited<T>>((resolve) => {
      timer = setTimeout(() => {
        late = true;
        this.stuck++;
        this.timedOut++;
        resolve({ ok: false, reason: `the read did not return within ${this.timeoutMs} ms (the process's memory map is locked, e.g. by a hung NFS mount)` });
      }, Math.max(1, until - Date.now()));
    });
    try {
      return await Promise.race([done, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The agent's one limiter (libuv's pool is per process). */
export const procReads = new BlockingReadLimiter(PROC_LIMITS.maxBlockingReads, PROC_LIMITS.readTimeoutMs);

/** For /readyz: not ready while reads hang. */
export function procReadiness(l: BlockingReadLimiter = procReads): { ok: boolean; detail: string } {
  if (l.stuck > 0) {
    return {
      ok: false,
      detail: `${l.stuck} of ${l.max} /proc cmdline reads stuck past ${l.timeoutMs} ms (a process's memory map is locked, e.g. a hung NFS mount); process listings show no cmdline while they are`,
    };
  }
  return { ok: true, detail: `/proc reads answering (${l.busy}/${l.max} blocking-read slots in use, ${l.timedOut} timed out since start)` };
}

/**
 * Read up to `maxBytes` of a file that may block in open(2) or read(2). Opened
 * without O_NONBLOCK: procfs ignores it for these files (the wait is on mmap_lock,
 * not on data), so it would protect nothing, and the limiter bounds what blocks.
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
