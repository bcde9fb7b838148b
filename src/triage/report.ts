/** A snapshot's findings as a report: verdict, counts, the sources' outcomes, and a terminal rendering. */
import type { Finding, Severity, SourceOutcome, TriageReport, Verdict } from '../model/triage.js';
import { runRules, RULES, type Rule } from './rules/index.js';
import type { Outcome } from '../lib/deadline.js';
import { escapeTerminal } from '../format.js';
import { gatherSnapshot, type GatherOptions, type TriageSnapshot, type TriageSources } from './snapshot.js';

const ORDER: Record<Severity, number> = { critical: 0, warning: 1, info: 2 };

function verdictOf(findings: readonly Finding[]): Verdict {
  if (findings.some((f) => f.severity === 'critical')) return 'critical';
  if (findings.some((f) => f.severity === 'warning')) return 'warning';
  return 'ok';
}

/** `nodetruth triage` exits 0 when all is well, 1 on warnings, 2 on critical findings. */
export const EXIT_CODES: Record<Verdict, number> = { ok: 0, warning: 1, critical: 2 };

const SOURCE_KEYS = ['runtime', 'pods', 'containers', 'cgroups', 'throttling', 'host', 'cni', 'oom', 'kubeletJournal', 'kernel', 'facts'] as const;

/** A report, plus what the sources skipped while the snapshot was taken (an unreadable cgroup, a node file). */
type TriageReportWithWarnings = TriageReport & { warnings: string[] };

/**
 * Every rule over the snapshot. A rule that throws on an item no one foresaw must not
 * take the report with it: then each rule runs alone, and one that fails becomes a
 * finding naming it (the other rules' findings stand).
 */
function findingsOf(s: TriageSnapshot, rules: readonly Rule[]): Finding[] {
  try {
    return runRules(s, rules);
  } catch {
    return rules.flatMap((r): Finding[] => {
      try {
        return runRules(s, [r]);
      } catch (err) {
        const why = String((err as Error | null)?.message ?? err).slice(0, 500);
        return [
          {
            id: 'rule-failed',
            severity: 'warning',
            title: `Triage rule ${(r as { name?: string }).name ?? r.ids.join(', ')} could not judge this snapshot`,
            detail: `the rule stopped on data it did not expect: ${why}`,
            evidence: [{ source: 'agent', excerpt: why }],
            hint: "Read the rule's sources directly (see the sources in this report) and report the data shape to nodetruth.",
          },
        ];
      }
    });
  }
}

export function buildReport(s: TriageSnapshot, rules: readonly Rule[] = RULES): TriageReportWithWarnings {
  const findings = findingsOf(s, rules).sort((a, b) => ORDER[a.severity] - ORDER[b.severity]);
  const counts: Record<Severity, number> = { critical: 0, warning: 0, info: 0 };
  for (const f of findings) counts[f.severity]++;
  const sources: Record<string, SourceOutcome> = {};
  for (const k of SOURCE_KEYS) {
    const g = s[k] as Outcome<unknown> | undefined;
    if (!g) continue; // an optional source the snapshot did not read
    sources[k] = g.ok ? { ok: true, durationMs: g.ms } : { ok: false, durationMs: g.ms, error: g.error };
  }
  const warnings = s.warnings ?? [];
  return { node: s.nodeName, takenAt: s.takenAt, windowMs: s.windowMs, verdict: verdictOf(findings), counts, findings, sources, warnings };
}

export async function triage(src: TriageSources, opts: GatherOptions): Promise<TriageReportWithWarnings> {
  return buildReport(await gatherSnapshot(src, opts));
}

const COLORS: Record<Severity | 'ok', string> = { critical: '\x1b[1;31m', warning: '\x1b[33m', info: '\x1b[36m', ok: '\x1b[32m' };
const RESET = '\x1b[0m';
const DIM = '\x1b[2m';

/**
 * The report for a terminal: one block per finding, evidence indented, the next step last.
 * Every value in it passes escapeTerminal (`x` below): titles, details, hints and
 * evidence quote what the node's tenants wrote (log lines, command lines, file
 * contents), and a report read from a bundle is whatever the bundle holds. Only the
 * colours added here reach the terminal as control sequences.
 */
export function renderText(r: TriageReport & { warnings?: string[] }, opts: { color?: boolean } = {}): string {
  const x = (v: unknown) => escapeTerminal(String(v ?? ''));
  const c = (k: Severity | 'ok' | 'dim', s: string) => (opts.color ? `${k === 'dim' ? DIM : (COLORS[k] ?? '')}${s}${RESET}` : s);
  const lines: string[] = [];
  const verdict = r.verdict === 'ok' ? c('ok', 'OK') : c(r.verdict, x(r.verdict).toUpperCase());
  lines.push(`nodetruth triage of ${x(r.node)} at ${x(r.takenAt)}: ${verdict} (${x(r.counts.critical)} critical, ${x(r.counts.warning)} warning, ${x(r.counts.info)} info)`);
  const down = Object.entries(r.sources).filter(([, o]) => !o.ok);
  if (down.length > 0) lines.push(c('dim', `sources that did not answer: ${down.map(([k]) => x(k)).join(', ')}`));
  const skipped = r.warnings ?? [];
  if (skipped.length > 0) {
    lines.push(c('dim', `skipped while reading (${skipped.length}):`));
    for (const w of skipped.slice(0, 5)) lines.push(c('dim', `  ${x(w)}`));
    if (skipped.length > 5) lines.push(c('dim', `  … ${skipped.length - 5} more (--json or /v1/triage lists them)`));
  }
  if (r.findings.length === 0) lines.push('', 'No findings: the runtime, kubelet, cgroups, disks, PIDs and recent logs look healthy.');
  for (const f of r.findings) {
    lines.push('');
    lines.push(`${c(f.severity, x(f.severity).toUpperCase().padEnd(8))} ${x(f.title)}  ${c('dim', `[${x(f.id)}]`)}`);
    lines.push(`         ${x(f.detail)}`);
    for (const e of f.evidence) {
      const cursor = e.cursor ? x(String(e.cursor).slice(0, 60)) + (String(e.cursor).length > 60 ? '…' : '') : null;
      const ref = [e.path ? x(e.path) : null, e.call ? x(e.call) : null, cursor ? `cursor ${cursor}` : null, e.seq !== undefined ? `seq ${x(e.seq)}` : null].filter(Boolean).join(' ');
      // an excerpt keeps its lines (each escaped); any other control in it is written as its escape
      const text = String(e.excerpt ?? '').split('\n');
      lines.push(c('dim', `         ${x(e.source)}${ref ? ` ${ref}` : ''}:`));
      for (const t of text.slice(0, 6)) lines.push(c('dim', `           ${x(t)}`));
      if (text.length > 6) lines.push(c('dim', `           … ${text.length - 6} more lines`));
    }
    lines.push(`         → ${x(f.hint)}`);
  }
  return `${lines.join('\n')}\n`;
}
