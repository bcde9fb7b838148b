import { constants, promises as fsp } from 'node:fs';
import path from 'node:path';
import { SourceError } from '../errors.js';
import type { HostFs } from '../hostfs/hostfs.js';

/** How journalctl is run: argv0 + fixed leading arguments (chroot, --root). */
export interface JournalctlCommand {
  mode: 'host' | 'host-chroot' | 'bundled' | 'configured';
  file: string;
  args: string[];
}

async function findExecutable(name: string, dirs = (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':')): Promise<string | null> {
  for (const d of dirs) {
    if (!d) continue;
    const p = path.join(d, name);
    try {
      await fsp.access(p, constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return null;
}

/**
 * Which journalctl reads the host's journal. `auto`: the host's own (it can read
 * every file format its journald writes) through chroot when the host root is
 * elsewhere, else ours with --root=<host-root>. A path: that binary, --root=<host-root>.
 * --root reads both <root>/var/log/journal and <root>/run/log/journal (several
 * --directory flags do not add up: the last one wins, measured with systemd 252).
 */
export async function resolveJournalctl(hostFs: HostFs, setting: string): Promise<JournalctlCommand> {
  const root = hostFs.root;
  if (setting !== 'auto') return { mode: 'configured', file: setting, args: [`--root=${root}`] };
  for (const candidate of ['/usr/bin/journalctl', '/bin/journalctl']) {
    if (!(await hostFs.exists(candidate))) continue;
    if (root === '/') return { mode: 'host', file: candidate, args: ['--root=/'] };
    const chroot = process.getuid?.() === 0 ? await findExecutable('chroot') : null;
    if (chroot) return { mode: 'host-chroot', file: chroot, args: [root, candidate, '--root=/'] };
  }
  const bundled = await findExecutable('journalctl');
  if (!bundled) throw new SourceError('source_unavailable', 'no journalctl found: neither on the host nor bundled');
  return { mode: 'bundled', file: bundled, args: [`--root=${root}`] };
}
