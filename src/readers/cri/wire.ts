/**
 * The protobuf wire pieces decode.ts reads CRI answers with, each as protobufjs 7's generated
 * decoders behave (decode.ts states what that takes): an enum's name, an int64 of nanoseconds
 * as RFC 3339, a nested message's bound, a map entry.
 */
import type protobuf from 'protobufjs/light.js';

export type Reader = protobuf.Reader;

/** An enum read as int32: its name, or the number when the enum has none (toObject with enums: String). */
export function enumName<T extends string>(names: readonly T[], v: number): T {
  return (v >= 0 && v < names.length ? names[v] : v) as T;
}

/**
 * An int64 of nanoseconds since the epoch, read from its varint, as RFC 3339 with nine
 * fraction digits; null for 0 and for negatives (unset), as normalize.ts's nanosToRfc3339.
 * The value is kept as seconds * 1e9 + nanos while the 7-bit groups are folded in from the
 * most significant: both parts stay below 2^53, so the result is exact. Bits past the 64th
 * are dropped and an 11th byte is an error, as protobufjs' readLongVarint does.
 */
export function readNanos(r: Reader): string | null {
  const buf = r.buf;
  const start = r.pos;
  let end = start;
  if (r.len - start <= 4) {
    // protobufjs' short route: three bytes checked, a fourth taken as the last whatever its top bit
    for (;;) {
      if (end - start === 3) {
        end++;
        break;
      }
      if (end >= r.len) throw RangeError(`index out of range: ${end} + 1 > ${r.len}`);
      if (buf[end++]! < 128) break;
    }
  } else {
    for (;;) {
      if (end - start === 10) throw Error('invalid varint encoding');
      if (end >= r.len) throw RangeError(`index out of range: ${end} + 1 > ${r.len}`);
      if (buf[end++]! < 128) break;
    }
  }
  r.pos = end;
  let seconds = 0;
  let nanos = 0;
  for (let i = end - 1; i >= start; i--) {
    // past the buffer (the short route's fourth byte) reads as 0, as it does in protobufjs
    const group = i - start === 9 ? (buf[i] ?? 0) & 1 : (buf[i] ?? 0) & 127;
    const low = nanos * 128 + group;
    const carry = Math.floor(low / 1e9);
    seconds = seconds * 128 + carry;
    nanos = low - carry * 1e9;
  }
  // 2^63 ns and above: a negative int64
  if (seconds > 9_223_372_036 || (seconds === 9_223_372_036 && nanos >= 854_775_808)) return null;
  if (seconds === 0 && nanos === 0) return null;
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}.${String(nanos).padStart(9, '0')}Z`;
}

/** The end of a length-delimited field starting here; the reader's bound set to it. Returns the bound to restore. */
export function enter(r: Reader): { end: number; outer: number } {
  const end = r.uint32() + r.pos;
  if (end > r.len) throw RangeError('index out of range');
  const outer = r.len;
  r.len = end;
  return { end, outer };
}

export function leave(r: Reader, bound: { end: number; outer: number }): void {
  if (r.pos !== bound.end) throw RangeError('index out of range');
  r.len = bound.outer;
}

/** One map<string, string> entry into `into`, as protobufjs' map decoding and toObject's copy leave it. */
export function readEntry(r: Reader, into: Record<string, string>, depth: number): void {
  const bound = enter(r);
  let k = '';
  let v = '';
  while (r.pos < bound.end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1:
        k = r.string();
        break;
      case 2:
        v = r.string();
        break;
      default:
        r.skipType(tag & 7, depth);
    }
  }
  leave(r, bound);
  // an own property, as protobufjs makes it (util.makeProp), never the prototype
  if (k === '__proto__') Object.defineProperty(into, k, { value: v, enumerable: true, writable: true, configurable: true });
  else into[k] = v;
}
