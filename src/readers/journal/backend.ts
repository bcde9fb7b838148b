/**
 * Which backend answers a unit query of /v1/logs: kubelet's own --log-file when its
 * command line names one, the journal when the node keeps one (/var/log/journal or
 * /run/log/journal under the host root), else the log file the distribution keeps for
 * the unit under /var/log (rules/node-os.ts UNIT_LOG_FILES: Talos' /var/log/<service>.log). A node without either answers
 * source_unavailable naming what was looked for: never 200 with nothing, which would
 * read as "the unit logged nothing".
 */
import { SourceError } from '../errors.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { JOURNAL_DIRS, UNIT_LOG_FILES } from '../../rules/node-os.js';
import { readHostLogFile } from './file-log.js';
import { JOURNAL_LIMITS } from './limits.js';
import { kubeletHostUnit, kubeletLogFile, type KubeletLogFile } from '../node/kubelet-log.js';

/** A unit's log file: its host path, the directory it must stay inside, and how it was found. */
interface UnitFile {
  unit: string;
  path: string;
  within: string;
  from: string;
}

type LogBackend = { kind: 'journal'; warnings: string[]; units?: string[] } | { kind: 'file'; files: UnitFile[]; why: string };

const isKubelet = (unit: string) => unit.replace(/\.service$/, '') === 'kubelet';

/** The files a unit may log to under /var/log (relative), in order. */
function unitLogFiles(unit: string): readonly string[] {
  const name = unit.replace(/\.service$/, '');
  return UNIT_LOG_FILES[name] ?? [`${name}.log`];
}

/**
 * kubelet started with --log-file (and --logtostderr=false) writes there and not to the
 * journal (rke2: kubelet is not even a unit): a query of kubelet alone reads that file,
 * journal or not. Otherwise the journal when the node keeps one, else the files under
 * /var/log the distribution keeps.
 */
export async function chooseLogBackend(fs: HostFs, units: readonly string[], kubeletFile?: KubeletLogFile | null): Promise<LogBackend> {
  const kf = units.some(isKubelet) ? (kubeletFile === undefined ? await kubeletLogFile(fs) : kubeletFile) : null;
  if (kf && 'refused' in kf) throw new SourceError('bad_parameter', `query: kubelet logs to a file it names, refused: ${kf.refused} (${kf.from})`, { param: 'query' });
  if (kf && units.every(isKubelet)) return { kind: 'file', files: [{ unit: units[0]!, path: kf.path, within: kf.within, from: kf.from }], why: 'kubelet logs to a file, not to the journal' };
  let journal = false;
  for (const d of JOURNAL_DIRS) if (await fs.exists(d)) journal = true;
  if (journal) {
    if (kf) return { kind: 'journal', warnings: [`kubelet logs to ${kf.path} (${kf.from}), not to the journal: query kubelet alone to read that file`] };
    // kubelet inside k3s: its records are the k3s unit's, not a kubelet unit's (which would answer nothing)
    const host = units.some(isKubelet) ? await kubeletHostUnit(fs).catch(() => null) : null;
    if (!host) return { kind: 'journal', warnings: [] };
    const mapped = [...new Set(units.map((u) => (isKubelet(u) ? host.unit : u)))];
    return { kind: 'journal', units: mapped, warnings: [`kubelet has no unit of its own: answered from ${host.unit} (${host.from}), which holds that program's own records too`] };
  }
  const files: UnitFile[] = [];
  const lookedFor: string[] = [...JOURNAL_DIRS];
  for (const unit of units) {
    if (kf && isKubelet(unit)) {
      files.push({ unit, path: kf.path, within: kf.within, from: kf.from });
      continue;
    }
    for (const rel of unitLogFiles(unit)) {
      const p = `${JOURNAL_LIMITS.nodeLogDir}/${rel}`;
      lookedFor.push(p);
      // a link counts as there: reading it then refuses one that leads out of /var/log (400), never a silent 503
      if ((await fs.exists(p)) || (await fs.readlink(p).catch(() => null)) !== null) {
        files.push({ unit, path: p, within: JOURNAL_LIMITS.nodeLogDir, from: `the file the node keeps for ${unit}` });
        break;
      }
    }
  }
  if (files.length === 0) {
    throw new SourceError('source_unavailable', `no journal and no log file for ${units.join(', ') || 'the query'} on this node (looked for ${lookedFor.join(', ')} under the host root)`);
  }
  return { kind: 'file', files, why: 'no journal on this node' };
}

/** A unit query answered from the files the node keeps (chooseLogBackend said which), with the same tailLines and pattern. */
export async function readUnitFiles(fs: HostFs, b: Extract<LogBackend, { kind: 'file' }>, units: readonly string[], tailLines: number | null, pattern: string | null) {
  const warnings: string[] = [];
  const lines: string[] = [];
  let truncated = false;
  const missing = units.filter((u) => !b.files.some((f) => f.unit === u));
  for (const f of b.files) {
    const r = await readHostLogFile(fs, f.path, f.within, tailLines, pattern);
    lines.push(...r.lines);
    truncated ||= r.truncated;
    warnings.push(...r.warnings);
  }
  const paths = b.files.map((f) => f.path);
  warnings.unshift(`${b.why}: answered from ${b.files.map((f) => `${f.path} (${f.from})`).join(', ')}; sinceTime, untilTime, boot and priority are not applied to a file`);
  if (missing.length) warnings.push(`no journal and no log file for ${missing.join(', ')}`);
  return { source: 'file' as const, file: paths[0]!, files: paths, lines: tailLines !== null && b.files.length > 1 ? lines.slice(-tailLines) : lines, truncated, warnings };
}
