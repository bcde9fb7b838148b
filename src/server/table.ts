/**
 * Aligned, curl-friendly text tables in the style of crictl's tabwriter output.
 * Only the layout: how cells are written (sizes, ages, ids) is src/format.ts.
 */
export interface Table {
  columns: string[];
  rows: (string | number | boolean | null | undefined)[][];
}

const PADDING = 3;

export function renderTable({ columns, rows }: Table): string {
  const cells = [columns, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? '' : String(c).replace(/[\r\n\t]/g, ' '))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
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
