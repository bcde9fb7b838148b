/**
 * Which backend answers a unit query of /v1/logs: the journal when the node keeps one
 * (/var/log/journal or /run/log/journal under the host root), else the log file the
 * distribution keeps for the unit under /var/log (rules/node-os.ts UNIT_LOG_FILES:
 * Talos' /var/log/<service>.log, kubelet's --log-file). A node without either answers
 * source_unavailable naming what was looked for: never 200 with nothing, which would
 * read as "the unit logged nothing".
 */
import { SourceError } from '../errors.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { JOURNAL_DIRS, UNIT_LOG_FILES } from '../../rules/node-os.js';
import { readLogFile } from './file-log.js';
import { JOURNAL_LIMITS } from './limits.js';

export type LogBackend = { kind: 'journal' } | { kind: 'file'; files: Array<{ unit: string; rel: string }> };

/** The files a unit may log to under /var/log (relative), in order. */
export function unitLogFiles(unit: string): readonly string[] {
  const name = unit.replace(/\.service$/, '');
  return UNIT_LOG_FILES[name] ?? [`${name}.log`];
}

export async function chooseLogBackend(fs: HostFs, units: readonly string[]): Promise<LogBackend> {
  for (const d of JOURNAL_DIRS) if (await fs.exists(d)) return { kind: 'journal' };
  const files: Array<{ unit: string; rel: string }> = [];
  const lookedFor: string[] = [...JOURNAL_DIRS];
  for (const unit of units) {
    let found: string | null = null;
    for (const rel of unitLogFiles(unit)) {
      lookedFor.push(`${JOURNAL_LIMITS.nodeLogDir}/${rel}`);
      // a link counts as there: reading it then refuses one that leads out of /var/log (400), never a silent 503
      const p = `${JOURNAL_LIMITS.nodeLogDir}/${rel}`;
      if ((await fs.exists(p)) || (await fs.readlink(p).catch(() => null)) !== null) {
        found = rel;
        break;
      }
    }
    if (found !== null) files.push({ unit, rel: found });
  }
  if (files.length === 0) {
    throw new SourceError('source_unavailable', `no journal and no log file for ${units.join(', ') || 'the query'} on this node (looked for ${lookedFor.join(', ')} under the host root)`);
  }
  return { kind: 'file', files };
}

/** A unit query answered from the files the node keeps (chooseLogBackend said which), with the same tailLines and pattern. */
export async function readUnitFiles(fs: HostFs, b: Extract<LogBackend, { kind: 'file' }>, units: readonly string[], tailLines: number | null, pattern: string | null) {
  const warnings: string[] = [];
  const lines: string[] = [];
  let truncated = false;
  const missing = units.filter((u) => !b.files.some((f) => f.unit === u));
  for (const f of b.files) {
    const r = await readLogFile(fs, f.rel, tailLines, pattern);
    lines.push(...r.lines);
    truncated ||= r.truncated;
    warnings.push(...r.warnings);
  }
  const paths = b.files.map((f) => `${JOURNAL_LIMITS.nodeLogDir}/${f.rel}`);
  warnings.unshift(`no journal on this node: answered from ${paths.join(', ')} (the file the node keeps for ${b.files.map((f) => f.unit).join(', ')}); sinceTime, untilTime, boot and priority are not applied to a file`);
  if (missing.length) warnings.push(`no journal and no log file for ${missing.join(', ')}`);
  return { source: 'file' as const, file: paths[0]!, files: paths, lines: tailLines !== null && b.files.length > 1 ? lines.slice(-tailLines) : lines, truncated, warnings };
}
