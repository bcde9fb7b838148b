/**
 * The roll-up of `fleet triage`: one line per node, worst first, then each finding with
 * the nodes that have it, identical findings collapsed into one block (as `dshbak -c`
 * does). Everything a node said is escaped for the terminal: node names, titles and
 * errors come from the nodes and are hostile.
 */
import { escapeTerminal } from '../format.js';

type RowVerdict = 'ok' | 'warning' | 'critical';

export interface FindingLite {
  id: string;
  severity: string;
  title: string;
}

export interface Row {
  node: string;
  pod: string | null;
  verdict?: RowVerdict;
  findings?: FindingLite[];
  error?: string;
  /** NotReady, cordoned, taints */
  notes: string[];
  observedAt: string;
}

const RANK: Record<string, number> = { critical: 0, error: 1, warning: 2, ok: 3 };
const SEV: Record<string, number> = { critical: 0, warning: 1, info: 2 };
const x = (s: unknown) => escapeTerminal(String(s));
const state = (r: Row) => (r.error !== undefined ? 'error' : (r.verdict ?? 'error'));

function sortWorstFirst(rows: Row[]): Row[] {
  return [...rows].sort((a, b) => (RANK[state(a)] ?? 9) - (RANK[state(b)] ?? 9) || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
}

/** Exit code: 2 any critical, 3 any node not answered, 1 any warning, else 0. */
export function exitCodeOf(rows: Row[]): number {
  if (rows.some((r) => r.verdict === 'critical')) return 2;
  if (rows.some((r) => r.error !== undefined)) return 3;
  if (rows.some((r) => r.verdict === 'warning')) return 1;
  return 0;
}

const worst = (fs: FindingLite[]) => [...fs].sort((a, b) => (SEV[a.severity] ?? 9) - (SEV[b.severity] ?? 9))[0];

export function renderRollup(rows: Row[]): string {
  const sorted = sortWorstFirst(rows);
  const w = Math.min(40, Math.max(4, ...sorted.map((r) => x(r.node).length)));
  const lines: string[] = [`${'NODE'.padEnd(w)}  ${'VERDICT'.padEnd(8)}  CRIT  WARN  INFO  WORST / ERROR`];
  for (const r of sorted) {
    const fs = r.findings ?? [];
    const n = (s: string) => (r.error !== undefined ? '-' : String(fs.filter((f) => f.severity === s).length));
    const top = r.error !== undefined ? r.error : fs.length ? `${worst(fs)!.id}: ${worst(fs)!.title}` : '';
    const notes = r.notes.length ? ` [${r.notes.join('; ')}]` : '';
    lines.push(`${x(r.node).padEnd(w)}  ${state(r).padEnd(8)}  ${n('critical').padStart(4)}  ${n('warning').padStart(4)}  ${n('info').padStart(4)}  ${x(top + notes).slice(0, 400)}`);
  }
  // identical findings (id, severity, title) collapse into one block naming every node
  const groups = new Map<string, { f: FindingLite; nodes: string[] }>();
  for (const r of rows)
    for (const f of r.findings ?? []) {
      const key = JSON.stringify([f.id, f.severity, f.title]);
      const g = groups.get(key) ?? { f, nodes: [] };
      if (!g.nodes.includes(r.node)) g.nodes.push(r.node);
      groups.set(key, g);
    }
  const errors = new Map<string, string[]>();
  for (const r of rows) if (r.error !== undefined) errors.set(r.error, [...(errors.get(r.error) ?? []), r.node]);
  const blocks = [...groups.values()].sort((a, b) => (SEV[a.f.severity] ?? 9) - (SEV[b.f.severity] ?? 9) || b.nodes.length - a.nodes.length || (a.f.id < b.f.id ? -1 : 1));
  if (blocks.length || errors.size) lines.push('');
  for (const g of blocks) {
    lines.push(`---------------- ${x(g.f.id)} (${x(g.f.severity)}) on ${g.nodes.length} node${g.nodes.length === 1 ? '' : 's'}: ${g.nodes.sort().map(x).join(',')}`);
    lines.push(`  ${x(g.f.title)}`);
  }
  for (const [e, nodes] of errors) {
    lines.push(`---------------- not answered on ${nodes.length} node${nodes.length === 1 ? '' : 's'}: ${nodes.sort().map(x).join(',')}`);
    lines.push(`  ${x(e)}`);
  }
  return lines.join('\n') + '\n';
}

/** `-o json`: [{ node, pod, verdict, findings | error, observedAt }], escaped for the terminal and still the same JSON. */
export function renderJson(rows: Row[]): string {
  const out = sortWorstFirst(rows).map((r) => ({
    node: r.node,
    pod: r.pod,
    verdict: r.verdict ?? null,
    ...(r.error !== undefined ? { error: r.error } : { findings: r.findings ?? [] }),
    notes: r.notes,
    observedAt: r.observedAt,
  }));
  return escapeTerminal(JSON.stringify(out, null, 2), { json: true }) + '\n';
}
