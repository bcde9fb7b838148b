import type { promises as fsp } from 'node:fs';
import { HOST_PATH_CODES, SourceError, type SourceErrorCode } from '../errors.js';
import { isHostPathError, type HostFs } from '../hostfs/hostfs.js';
import { JOURNAL_LIMITS } from './limits.js';
import { compileUserPattern } from '../user-pattern.js';
import { redactLogText } from '../../redact.js';
import { mapSliced } from '../../lib/turns.js';

interface FileLogResult {
  file: string;
  lines: string[];
  truncated: boolean;
  /** e.g. lines matched over their first 64 KiB only (lib/pattern.ts) */
  warnings: string[];
}

/**
 * A file under <host-root>/var/log (kubelet: a node log query with a slash).
 * The relative path is validated (no ..) and opened with HostFs.openFile
 * within /var/log (every component resolved inside the host root, the fd
 * checked by the kernel's name for it); only regular files are read, the
 * last maxFileBytes of them.
 */
export async function readLogFile(fs: HostFs, rel: string, tailLines: number | null, pattern: string | null): Promise<FileLogResult> {
  return readHostLogFile(fs, `${JOURNAL_LIMITS.nodeLogDir}/${rel}`, JOURNAL_LIMITS.nodeLogDir, tailLines, pattern);
}

/**
 * A log file at a host path, read only inside `within` (a host directory): /var/log for a
 * node log query, the directory kubelet's --log-file names for its log. Bounded and
 * redacted as readLogFile.
 */
export async function readHostLogFile(fs: HostFs, hostPath: string, within: string, tailLines: number | null, pattern: string | null): Promise<FileLogResult> {
  // every component resolved inside the host root and inside `within`: a directory
  // link such as /var/log/foo -> /etc, or a file link out of it, is refused, not followed
  let fh: fsp.FileHandle | null;
  try {
    fh = await fs.openFile(hostPath, { within });
  } catch (err) {
    const refused = (code: SourceErrorCode, detail: string) => new SourceError(code, `query: ${detail}`, { param: 'query' });
    if (isHostPathError(err)) {
      if (err.code === 'EXDEV') throw refused('path_outside_root', `${hostPath} leads outside ${within}`);
      if (err.code === 'EFTYPE') throw refused('path_not_regular', `${hostPath} is not a regular file`);
    }
    const code = (err as NodeJS.ErrnoException).code;
    throw refused(isHostPathError(err) ? HOST_PATH_CODES[err.code] : code === 'ELOOP' ? 'path_link_loop' : 'bad_parameter', `cannot open ${hostPath}: ${code ?? 'error'}`);
  }
  if (fh === null) throw new SourceError('not_found', `query: ${hostPath} does not exist`);
  try {
    const st = await fh.stat();
    const max = JOURNAL_LIMITS.maxFileBytes;
    const from = Math.max(0, st.size - max);
    const buf = Buffer.allocUnsafe(Math.min(st.size, max));
    const { bytesRead } = await fh.read(buf, 0, buf.length, from);
    let text = buf.toString('utf8', 0, bytesRead);
    if (from > 0) text = text.slice(text.indexOf('\n') + 1);
    let lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const warnings: string[] = [];
    const cut = cutLongLines(lines);
    if (cut > 0) warnings.push(`${cut} line(s) longer than ${JOURNAL_LIMITS.maxFileLineChars} characters: their first ${JOURNAL_LIMITS.maxFileLineChars} kept`);
    // lines leave redacted (the free-text rules, as journal records and container logs);
    // a pattern matches the redacted lines, so it cannot probe a redacted value. In slices: 16 MiB of lines is ~0.5 s.
    const redact = (ls: string[]) => mapSliced(ls, redactLogText, { maxItems: 2000 });
    if (pattern !== null) {
      lines = await redact(lines);
      // RE2 syntax, matched off the event loop; a tail searches from the last line and stops at tailLines matches
      const m = await (await compileUserPattern(pattern)).filter(lines, (l) => l, { limit: tailLines, fromEnd: tailLines !== null });
      lines = m.items;
      warnings.push(...m.warnings);
    }
    if (tailLines !== null) lines = tailLines === 0 ? [] : lines.slice(-tailLines);
    if (pattern === null) lines = await redact(lines);
    return { file: hostPath, lines, truncated: from > 0, warnings };
  } finally {
    await fh.close();
  }
}

/** Cuts, in place, every line past JOURNAL_LIMITS.maxFileLineChars to its head and a note of what was cut; returns how many. */
function cutLongLines(lines: string[]): number {
  const max = JOURNAL_LIMITS.maxFileLineChars;
  let cut = 0;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.length <= max) continue;
    lines[i] = `${l.slice(0, max)} [${l.length - max} characters cut]`;
    cut++;
  }
  return cut;
}
