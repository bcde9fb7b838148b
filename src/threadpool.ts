/**
 * libuv's thread pool serves every file read, statfs and DNS lookup of the agent. Some of
 * those calls can block for as long as the node is sick: a read of /proc/<pid>/cmdline waits
 * on the target's mmap_lock (a hung NFS mount), a statfs of a hung mount never returns. The
 * proc and statfs limiters each let at most 2 such calls hold a thread; with libuv's default
 * of 4, both stuck at once would leave none for anything else. 8 keeps 4 free.
 *
 * libuv reads the variable when the pool starts (its first task), so this module is the
 * entry point's first import: it runs before any module that could start the pool. An
 * operator's own UV_THREADPOOL_SIZE wins.
 */
export const DEFAULT_THREADPOOL_SIZE = 8;

process.env.UV_THREADPOOL_SIZE ??= String(DEFAULT_THREADPOOL_SIZE);
