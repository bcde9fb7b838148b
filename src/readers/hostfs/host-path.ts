/**
 * What a host path may be: the refusals HostFs throws (errno-style codes), what counts as
 * "not there (any more)", the checks of path text and plain names, and the judgement of the
 * kernel's name for an fd against the path that was resolved. Shared by HostFs and the
 * synchronous readers (read-sync.ts).
 */

/**
 * Codes of a refused host path, errno-style so `err.code` checks compose:
 * EXDEV  the path leads outside the host root, or outside the subtree the caller required;
 * EFTYPE the path names something other than what was asked for (a device, a FIFO, a directory);
 * ELOOP  too many links, or a link swapped in while it was being opened.
 */
export type HostPathCode = 'EXDEV' | 'EFTYPE' | 'ELOOP';
export class HostPathError extends Error {
  readonly code: HostPathCode;
  readonly hostPath: string;
  constructor(code: HostPathCode, hostPath: string, message: string) {
    super(message);
    this.name = 'HostPathError';
    this.code = code;
    this.hostPath = hostPath;
  }
}
export const isHostPathError = (err: unknown): err is HostPathError => err instanceof HostPathError;

/** Errors meaning "this thing is not there (any more)": a vanished pid or cgroup. */
const GONE = new Set(['ENOENT', 'ENOTDIR', 'ESRCH', 'ENODEV', 'ENXIO']);
export const isGone = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && GONE.has((err as NodeJS.ErrnoException).code ?? '');

/**
 * A directory already resolved inside the host root: realPath is link-free.
 * Files directly in it are opened by that path with O_NOFOLLOW and the kernel's
 * name for the fd is compared with it, so a directory resolved once can be read
 * many times without walking its path again (cgroup trees hold thousands of them).
 */

export function assertPathText(p: string): void {
  if (p.includes('\0')) throw Object.assign(new Error('NUL byte in path'), { code: 'EINVAL' });
}

export function assertName(name: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw Object.assign(new Error(`not a plain file name: ${JSON.stringify(name)}`), { code: 'EINVAL' });
  }
}

export const errCode = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | null)?.code;

export const escapes = (hostPath: string, within?: string) =>
  new HostPathError('EXDEV', hostPath, within === undefined ? `${hostPath} escapes the host root` : `${hostPath} leads outside ${within}`);

/** Shared by the async and sync readers: what the kernel named an fd vs the path we resolved. */
export function judgeFdPath(actual: string, expected: string, hostPath: string): 'ok' | 'gone' {
  if (actual === expected) return 'ok';
  // unlinked after the open (a vanished pid or cgroup, a rotated log): as if it was never found
  if (actual === `${expected} (deleted)`) return 'gone';
  throw new HostPathError('EXDEV', hostPath, `${hostPath} escapes the host root (a link was swapped in while it was opened)`);
}
