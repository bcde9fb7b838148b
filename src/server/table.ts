/**
 * Aligned, curl-friendly text tables in the style of crictl's tabwriter output.
 * Only the layout: how cells are written (sizes, ages, ids) is src/format.ts.
 * Every cell passes escapeTerminal: a control character in a cell (a tab, a
 * newline, ESC, a C1 control, a bidi override) is written as its visible escape
 * (`\t`, `\n`, `\x1b`, `\u202e`), so a row stays one line, the columns stay
 * aligned and nothing a tenant wrote can move the cursor or restyle the terminal.
 */
import { escapeTerminal } from '../format.js';

export interface Table {
  columns: string[];
  rows: (string | number | boolean | null | undefined)[][];
}

const PADDING = 3;

export function renderTable({ columns, rows }: Table): string {
  const cells = [columns, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? '' : escapeTerminal(String(c)))))];
  // a loop, not Math.max(...column): spreading ~140,000 rows (a container's cgroup.procs) overflows the stack
  const widths = columns.map(() => 0);
  for (const r of cells) for (let i = 0; i < widths.length; i++) widths[i] = Math.max(widths[i]!, (r[i] ?? '').length);
  return (
    cells
      .map((r) =>
        r
          .map((c, i) => (i === r.length - 1 ? c : (c ?? '').padEnd((widths[i] ?? 0) + PADDING)))
          .join('')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
