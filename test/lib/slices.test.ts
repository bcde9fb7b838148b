/**
 * jsonBuffer: the bytes of JSON.stringify, produced in slices with a yield between
 * them. Checked against JSON.stringify itself on the shapes that differ between the two kinds of
 * writing (left-out values, toJSON, hostile strings, null-prototype objects, big lists), and the
 * bound counted: how many entries are stringified between two yields, never a duration.
 */
import t from 'tap';
import { jsonBuffer, SLICING, type Slicing } from '../../src/lib/slices.js';

const sym = Symbol('s');
const hostile = ['"quoted"', 'back\\slash', 'new\nline\r\t', 'ünïcødé ☃ 𝄞', '\u0000\u001f\u2028\u2029', '\ud800 lone surrogate', '</script>'];
const nullProto = Object.assign(Object.create(null) as object, { b: 1, a: [undefined] });
const cases: [string, unknown][] = [
  ['an answer', { cgroupVersion: 2, drivers: ['systemd'], runtime: { joined: true, detail: '' }, items: Array.from({ length: 300 }, (_, i) => ({ id: `c${i}`, v: i * 1.5, n: null })), warnings: [] }],
  ['left out in objects, null in arrays', { u: undefined, f: () => 1, s: sym, [sym]: 1, keep: 0, list: [undefined, () => 1, sym, 1], deep: { u: undefined, x: [undefined] } }],
  ['toJSON and Date', { when: new Date(0), own: { toJSON: () => ({ shown: true }) }, gone: { toJSON: () => undefined }, list: [{ toJSON: () => 'x' }, new Date(1)] }],
  ['hostile strings, as keys and values', Object.fromEntries(hostile.map((h, i) => [h, [h, { [h]: i }]]))],
  ['key order: integer-like keys first, as Object.keys', { b: 1, 2: 'two', a: 2, 1: 'one', '-1': 'minus' }],
  ['a null-prototype object, numbers', { p: nullProto, n: [0, -0, 1e21, 1e-7, NaN, Infinity, -Infinity], big: Array.from({ length: 70 }, (_, i) => [i, { i }]) }],
  ['empties', { a: [], o: {}, s: '', nested: [[], {}, [[]]] }],
  ['a top-level array', [1, 'two', undefined, { three: [3] }, null]],
  ['a toJSON at the top', { toJSON: () => ({ replaced: [1, 2] }) }],
  ['a class instance (not split)', { m: new Map([[1, 2]]), e: new Error('x'), r: /re/g, b: Buffer.from('ab') }],
];

t.test('byte-identical to JSON.stringify, whatever the slice size', async (t) => {
  for (const [name, v] of cases) {
    const want = Buffer.from(JSON.stringify(v));
    for (const sliceChars of [1, 7, 64, SLICING.sliceChars]) {
      const got = await jsonBuffer(v, { sliceChars, pause: () => Promise.resolve() });
      t.ok(got.equals(want), `${name}, slices of ${sliceChars}`);
    }
  }
});

t.test('throws what JSON.stringify throws', async (t) => {
  await t.rejects(jsonBuffer({ items: [{ n: 1n }] }), TypeError, 'a BigInt');
  const cyc: Record<string, unknown> = { items: [] };
  (cyc.items as unknown[]).push(cyc);
  await t.rejects(jsonBuffer(cyc), TypeError, 'a cycle');
});

t.test('a big answer yields between slices; each slice is bounded by its size', async (t) => {
  // a container list of the real size at 3,000 containers (~6 MB), each item ~2 KB of JSON
  let stringified = 0;
  const perSlice: number[] = [];
  const item = (i: number) => ({ toJSON: () => (stringified++, { id: `${i}`.padStart(64, 'a'), labels: Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`io.kubernetes.label-${k}`, `value-${i}-${k}-${'v'.repeat(40)}`])) }) });
  const answer = { items: Array.from({ length: 3000 }, (_, i) => item(i)), warnings: ['one'] };
  const slicing: Slicing = {
    sliceChars: 64 * 1024,
    pause: async () => {
      perSlice.push(stringified);
      stringified = 0;
    },
  };
  const body = await jsonBuffer(answer, slicing);
  t.ok(body.length > 5_000_000, `the answer is ${body.length} bytes`);
  t.ok(perSlice.length >= Math.floor(body.length / slicing.sliceChars) - 1, `${perSlice.length} yields for ${body.length} bytes`);
  // an item is ~2 KB: a 64 KiB slice stringifies at most ~33 of them (one more ends the slice)
  const itemBytes = Buffer.byteLength(JSON.stringify(answer.items[0]));
  t.ok(Math.max(...perSlice) <= Math.ceil(slicing.sliceChars / itemBytes) + 1, `at most ${Math.max(...perSlice)} items between two yields`);
  stringified = 0;
  t.ok(body.equals(Buffer.from(JSON.stringify(answer))), 'the same bytes as one JSON.stringify');
});
