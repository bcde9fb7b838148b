import t from 'tap';
import { ExportParser } from '../../../src/readers/journal/export-parser.js';
import { exportEntry } from '../../fixtures/journal/gen.js';

const entries = [
  exportEntry([['__CURSOR', 's=1;i=1'], ['MESSAGE', 'plain = with equals'], ['PRIORITY', '6']]),
  exportEntry([['__CURSOR', 's=1;i=2'], ['MESSAGE', 'multi\nline ü 日本語 ✓'], ['_PID', '7']]),
  exportEntry([['__CURSOR', 's=1;i=3'], ['MESSAGE', Buffer.from([0x62, 0x61, 0x64, 0x20, 0xff, 0x0a])]]),
];
const all = Buffer.concat(entries);

t.test('whole buffer', async (t) => {
  const p = new ExportParser();
  const out = p.push(all);
  t.equal(out.length, 3);
  t.equal(out[0]!.get('MESSAGE'), 'plain = with equals');
  t.equal(out[1]!.get('MESSAGE'), 'multi\nline ü 日本語 ✓');
  t.equal(out[1]!.get('_PID'), '7');
  t.equal(out[2]!.get('MESSAGE'), 'bad \ufffd\n');
  t.equal(p.pendingBytes, 0);
});

t.test('every split point, and one byte at a time', async (t) => {
  const want = new ExportParser().push(all).map((e) => [...e]);
  for (let i = 1; i < all.length; i++) {
    const p = new ExportParser();
    const got = [...p.push(all.subarray(0, i)), ...p.push(all.subarray(i))].map((e) => [...e]);
    if (JSON.stringify(got) !== JSON.stringify(want)) t.fail(`split at ${i}`);
  }
  const p = new ExportParser();
  const got = [];
  for (const b of all) got.push(...p.push(Buffer.from([b])));
  t.same(got.map((e) => [...e]), want);
});

t.test('an entry cut off (journalctl killed) is not returned', async (t) => {
  const p = new ExportParser();
  t.equal(p.push(all.subarray(0, all.length - 1)).length, 2, 'no closing empty line');
  const q = new ExportParser();
  t.equal(q.push(all.subarray(0, all.length - 4)).length, 2, 'binary value cut');
  t.ok(q.pendingBytes > 0);
});
