/**
 * src/readers/cri/wire.ts: the wire pieces against protobufjs' own Writer and Reader. An int64
 * of nanoseconds comes back as RFC 3339 exact to the nanosecond (0 and negatives: null); a
 * nested message's bound is kept and a short one refused; a map entry's `__proto__` key is an
 * own property; an enum number without a name stays a number.
 */
import protobuf from 'protobufjs/light.js';
import t from 'tap';
import { enter, enumName, leave, readEntry, readNanos } from '../../../src/readers/cri/wire.js';

const int64 = (v: string) => protobuf.Reader.create(protobuf.Writer.create().int64((protobuf.util.Long as unknown as { fromString(s: string): protobuf.Long }).fromString(v)).finish());

t.test('readNanos: exact to the nanosecond; 0 and negative int64 are unset', async (t) => {
  t.equal(readNanos(int64('1764633600123456789')), '2025-12-02T00:00:00.123456789Z');
  t.equal(readNanos(int64('1000000001')), '1970-01-01T00:00:01.000000001Z');
  t.equal(readNanos(int64('9223372036854775807')), '2262-04-11T23:47:16.854775807Z', 'the largest int64');
  t.equal(readNanos(int64('0')), null);
  t.equal(readNanos(int64('-1')), null, 'ten bytes of varint: a negative int64');
  const r = int64('1764633600123456789');
  readNanos(r);
  t.equal(r.pos, r.len, 'the reader is left after the varint');
  t.throws(() => readNanos(protobuf.Reader.create(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))), RangeError, 'a varint cut short');
});

t.test('enter/leave: the nested bound, restored after; one past the buffer refused', async (t) => {
  const bytes = protobuf.Writer.create().bytes(Uint8Array.from([1, 2, 3])).uint32(7).finish();
  const r = protobuf.Reader.create(bytes);
  const b = enter(r);
  t.equal(r.len, b.end);
  r.skip(3);
  leave(r, b);
  t.equal(r.len, bytes.length, 'the outer bound again');
  t.equal(r.uint32(), 7);
  t.throws(() => enter(protobuf.Reader.create(Uint8Array.from([5, 1]))), RangeError, 'a length past the end');
});

t.test('readEntry: key and value; __proto__ an own property, the prototype untouched', async (t) => {
  const entry = (k: string, v: string) => protobuf.Writer.create().fork().uint32(10).string(k).uint32(18).string(v).ldelim().finish();
  const into: Record<string, string> = {};
  readEntry(protobuf.Reader.create(entry('app', 'web')), into, 0);
  readEntry(protobuf.Reader.create(entry('__proto__', 'x')), into, 0);
  t.same(Object.keys(into), ['app', '__proto__']);
  t.equal(Object.getPrototypeOf(into), Object.prototype);
  t.equal(Object.getOwnPropertyDescriptor(into, '__proto__')?.value, 'x');
});

t.test('enumName: the name, or the number it has none for', async (t) => {
  t.equal(enumName(['A', 'B'] as const, 1), 'B');
  t.equal(enumName(['A', 'B'] as const, 7) as unknown, 7);
});
