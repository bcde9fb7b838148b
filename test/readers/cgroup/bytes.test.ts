/**
 * The byte scanners under the cgroup parsers. Each reads b[s, e) of one read buffer
 * that holds other files after `e`: nothing may be read past it.
 */
import t from 'tap';
import { decimalAt, intAt, keyIndex, keys, lineAt, nextLine, scanFields, scanFlatKeyed, type ValueAt } from '../../../src/readers/cgroup/bytes.js';

const buf = (s: string) => Buffer.from(s, 'latin1');
/** A file followed by another file's bytes in the same buffer, as cgroups.ts reads them. */
const inBuffer = (file: string, next: string) => ({ b: buf(file + next), s: 0, e: Buffer.byteLength(file, 'latin1') });

t.test('intAt: -?\\d{1,20}, exact to 2^64, NaN otherwise', async (t) => {
  const at = (s: string) => intAt(buf(s), 0, s.length);
  t.equal(at('0'), 0);
  t.equal(at('-12'), -12);
  t.equal(at('18446744073709551615'), 18446744073709551615);
  t.equal(at('123456789012345678'), Number('123456789012345678'), 'past 15 digits, the double Number() gives');
  t.ok(Number.isNaN(at('')));
  t.ok(Number.isNaN(at('-')));
  t.ok(Number.isNaN(at('99999999999999999999')), 'above 2^64');
  t.ok(Number.isNaN(at('123456789012345678901')), '21 digits');
  t.ok(Number.isNaN(at('1e3')));
  t.ok(Number.isNaN(at(' 1')), 'whitespace is the caller’s to trim');
  const { b, s, e } = inBuffer('42', '99');
  t.equal(intAt(b, s, e), 42, 'stops at e');
});

t.test('decimalAt: \\d{1,10}(\\.\\d{1,4})?, as Number() of the text', async (t) => {
  const at = (s: string) => decimalAt(buf(s), 0, s.length);
  t.equal(at('47.58'), 47.58);
  t.equal(at('0.10'), 0.1);
  t.equal(at('3'), 3);
  for (const bad of ['', '.5', '5.', '1.23456', '12345678901', '1.2.3', '-1.0', '1,5']) t.ok(Number.isNaN(at(bad)), JSON.stringify(bad));
});

t.test('keyIndex matches whole keys only', async (t) => {
  const ks = keys('oom', 'oom_kill');
  const at = (s: string) => keyIndex(buf(s), 0, s.length, ks);
  t.equal(at('oom'), 0);
  t.equal(at('oom_kill'), 1);
  t.equal(at('oo'), -1);
  t.equal(at('oom_kil'), -1);
  t.equal(at(''), -1);
});

t.test('scanFlatKeyed: the last line of a key wins, a malformed line is told, the next file is not read', async (t) => {
  const ks = keys('a', 'b', 'c');
  const out = new Float64Array(3);
  const { b, s, e } = inBuffer('a 1\nb 2\na 3\n\njunk\n', 'c 9\n');
  t.equal(scanFlatKeyed(b, s, e, ks, out), true, '"junk" has no value');
  t.same([...out], [3, 2, NaN]);
  const clean = buf('a 1\nb \t2 \n');
  t.equal(scanFlatKeyed(clean, 0, clean.length, ks, out), false);
  t.same([...out], [1, 2, NaN], 'refilled with NaN, whitespace around the value trimmed');
});

t.test('nextLine: trimmed non-blank lines and their first word, never past e', async (t) => {
  const { b, s, e } = inBuffer('  some a=1  \n\n \t\nfull\nlast', 'next file\n');
  const seen: string[] = [];
  for (const l = lineAt(s); nextLine(b, e, l); ) seen.push(`${b.toString('latin1', l.start, l.word)}|${b.toString('latin1', l.start, l.end)}`);
  t.same(seen, ['some|some a=1', 'full|full', 'last|last']);
  const empty = buf('\n \n');
  t.equal(nextLine(empty, empty.length, lineAt(0)), false);
});

t.test('scanFields: k=v fields by their own reader, bounded in count', async (t) => {
  const ks = keys('x', 'y');
  const readers: ValueAt[] = [intAt, decimalAt];
  const out = new Float64Array(2);
  const at = (s: string, max = 4) => scanFields(buf(s), 0, s.length, ks, readers, max, out);
  t.equal(at(' x=5  y=0.25 z=junk'), true);
  t.same([...out], [5, 0.25]);
  t.equal(at('x y=1'), true);
  t.same([...out], [NaN, 1], 'a key without "=" has no value');
  t.equal(at('x=1 y=2 x=3'), true);
  t.same([...out], [3, 2], 'the last field of a key wins');
  t.equal(at('a=1 '.repeat(16_000)), false, 'a 64 KiB line of fields stops at the bound');
  t.equal(at('x=1 y=2 a b', 4), true, 'exactly at the bound is kept');
  t.equal(at('x=1 y=2 a b c', 4), false);
});
