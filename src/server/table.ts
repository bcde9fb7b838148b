/** Aligned, curl-friendly text tables in the style of crictl's tabwriter output. */
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

/** crictl prints IDs cut to 13 characters. */
export const shortId = (id: string | null | undefined): string => (id ?? '').slice(0, 13);

/** crictl's CREATED column: "5 minutes ago". */
export function ago(iso: string | null, now = Date.now()): string {
  if (!iso) return '';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  const [n, unit] =
    s < 60 ? [s, 'second'] : s < 3600 ? [Math.floor(s / 60), 'minute'] : s < 86400 ? [Math.floor(s / 3600), 'hour'] : [Math.floor(s / 86400), 'day'];
  if (unit === 'second' && n < 1) return 'Less than a second ago';
  return `${n} ${unit}${n === 1 ? '' : 's'} ago`;
}

/** CONTAINER_RUNNING → Running, SANDBOX_NOTREADY → NotReady (crictl's words). */
export function stateWord(state: string): string {
  const words: Record<string, string> = {
    CONTAINER_CREATED: 'Created',
    CONTAINER_RUNNING: 'Running',
    CONTAINER_EXITED: 'Exited',
    CONTAINER_UNKNOWN: 'Unknown',
    SANDBOX_READY: 'Ready',
    SANDBOX_NOTREADY: 'NotReady',
  };
  return words[state] ?? state;
}

/** crictl images' SIZE column: 1.2MB (decimal units, as docker's go-units HumanSize). */
export function humanSize(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let v = bytes;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${Number(v.toPrecision(3))}${units[i]}`;
}
