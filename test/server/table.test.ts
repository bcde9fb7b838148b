/** The text tables' layout: aligned columns, one line a row, whatever the cells hold and however many rows. */
import t from 'tap';
import { renderTable } from '../../src/server/table.js';

t.test('columns are aligned to the widest cell, the last one is not padded', async (t) => {
  t.equal(renderTable({ columns: ['PID', 'CMD'], rows: [[1, 'init'], [12345, null], [7, undefined]] }), 'PID     CMD\n1       init\n12345\n7\n');
});

t.test('a cell with controls stays on its row: tab, newline, CR, ESC and bidi controls are escaped', async (t) => {
  t.equal(renderTable({ columns: ['A', 'B'], rows: [['x\ty', 'a\nb\rc\x1b[2K\u202ed']] }), 'A      B\nx\\ty   a\\nb\\rc\\x1b[2K\\u202ed\n');
});

t.test('as many rows as a cgroup.procs of 1 MiB can list (~140,000 pids), and more', async (t) => {
  const rows = Array.from({ length: 200_000 }, (_, i) => [i, 'sleep']);
  const out = renderTable({ columns: ['PID', 'COMM'], rows });
  t.equal(out.split('\n').length, 200_002, 'header, every row, the final newline');
  t.ok(out.endsWith('199999   sleep\n'));
});
