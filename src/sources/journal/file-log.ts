import { constants, promises as fsp } from 'node:fs';
import { badRequest, notFound } from '../../errors.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { JOURNAL_LIMITS } from './limits.js';
import { compileUserPattern } from '../../util/pattern.js';

export interface FileLogResult {
  file: string;
  lines: string[];
  truncated: boolean;
  /** e.g. lines matched over their first 64 KiB only (util/pattern.ts) */
  warnings: string[];
}

/**
 * A file under <host-root>/var/log (kubelet: a node log query with a slash).
 * The relative path is validated (no ..) and resolved inside the host root
 * (symlinks stay inside it); only regular files are read, the last
 * maxFileBytes of them.
 */
export async function readLogFile(fs: HostFs, rel: string, tailLines: number | null, pattern: string | null): Promise<FileLogResult> {
  const hostPath = `${JOURNAL_LIMITS.nodeLogDir}/${rel}`;
  const real = await fs.resolve(hostPath);
  // HostFs keeps links inside the host root; a node log query must also stay inside /var/log
  const logDir = await fs.resolve(JOURNAL_LIMITS.nodeLogDir);
  if (!real.startsWith(logDir + '/')) throw badRequest(`query: ${hostPath} leads outside ${JOURNAL_LIMITS.nodeLogDir}`, { param: 'query' });
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw notFound(`query: ${hostPath} does not exist`);
    throw badRequest(`query: cannot open ${hostPath}: ${code}`, { param: 'query' });
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw badRequest(`query: ${hostPath} is not a regular file`, { param: 'query' });
    const max = JOURNAL_LIMITS.maxFileBytes;
    const from = Math.max(0, st.size - max);
    const buf = Buffer.allocUnsafe(Math.min(st.size, max));
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    let text = buf.toString('utf8', 0, bytesRead);
    if (from > 0) text = text.slice(text.indexOf('\n') + 1);
    let lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const warnings: string[] = [];
    if (pattern !== null) {
      // RE2 syntax, matched off the event loop; a tail searches from the last line and stops at tailLines matches
      const m = await (await compileUserPattern(pattern)).filter(lines, (l) => l, { limit: tailLines, fromEnd: tailLines !== null });
      lines = m.items;
      warnings.push(...m.warnings);
    }
    if (tailLines !== null) lines = tailLines === 0 ? [] : lines.slice(-tailLines);
    return { file: hostPath, lines, truncated: from > 0, warnings };
  } finally {
    await fh.close();
  }
}
