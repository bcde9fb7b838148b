import type { HostFs, ResolvedDir } from './hostfs.js';

/**
 * readIn, with a symlink in place of the file treated as "no such file".
 * cgroupfs and procfs never hold symlinks where interface files live, so one
 * there was planted; it is neither followed (readIn opens with O_NOFOLLOW) nor
 * allowed to fail a whole listing.
 */
export async function readInNoLink(fs: HostFs, dir: ResolvedDir, name: string, maxBytes?: number): Promise<string | null> {
  try {
    return await fs.readIn(dir, name, maxBytes);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') return null;
    throw err;
  }
}
