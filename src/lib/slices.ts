/**
 * Long synchronous renders cut into slices with a turn of the event loop between them (no
 * piece of work may hold the loop more than 100 ms).
 *
 * JSON.stringify of a full-node answer (2 MB for /v1/cgroups at 1,000 containers, 6 MB at
 * 3,000) is one call that cannot be interrupted, and answers of several queries of one reading
 * are rendered in the same stretch (bench/RESULTS.md, "the event loop under load").
 * The slices are bounded by work (characters produced), not by time, so a test can count them.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

export interface Slicing {
  /** characters of output between two yields (about; one array element or field is never split) */
  sliceChars: number;
  /** what a yield is: a turn of the event loop; tests count them */
  pause: () => Promise<unknown>;
}

/**
 * 256 Ki characters: JSON.stringify makes ~100-200 MB/s of this shape on the 2-core test machine,
 * so a slice costs ~2 ms alone, and stays far below 100 ms when the machine is 10x slower.
 */
export const SLICING: Slicing = { sliceChars: 256 * 1024, pause: () => nextTurn() };

/**
 * How deep the render cuts: the answer (depth 0) and its fields (1: `items`, `warnings`) are
 * written entry by entry; each entry of those (a container, a cgroup record) is stringified
 * whole, one call, which is cheaper than a call per field.
 */
const SPLIT_DEPTH = 2;

const plain = (v: object) => {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/**
 * The UTF-8 bytes of JSON.stringify(value), produced in slices. Byte-identical to it: the same
 * keys (Object.keys order), `undefined`, functions and symbols left out of objects and `null`
 * in arrays, toJSON honoured (a value with a toJSON is stringified whole, as is anything that
 * is not a plain object or an array; its toJSON is called with the key "" rather than its own,
 * which only a toJSON that reads its key could tell). Throws what JSON.stringify throws (a
 * BigInt; a cycle, once it reaches the depth stringified whole).
 */
export async function jsonBuffer(value: unknown, slicing: Slicing = SLICING): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let part = '';
  const put = async (s: string) => {
    part += s;
    if (part.length >= slicing.sliceChars) {
      chunks.push(Buffer.from(part));
      part = '';
      await slicing.pause();
    }
  };
  const splittable = (v: unknown): v is object =>
    v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON !== 'function' && (Array.isArray(v) || plain(v));
  /** writes `v` as JSON; false where JSON.stringify leaves it out (nothing written) */
  const write = async (v: unknown, depth: number): Promise<boolean> => {
    if (depth < SPLIT_DEPTH && splittable(v)) {
      if (Array.isArray(v)) await writeArray(v, depth);
      else await writeObject(v as Record<string, unknown>, depth);
      return true;
    }
    const s = JSON.stringify(v);
    if (s === undefined) return false;
    await put(s);
    return true;
  };
  const writeArray = async (a: readonly unknown[], depth: number) => {
    await put('[');
    for (let i = 0; i < a.length; i++) {
      if (i) await put(',');
      if (!(await write(a[i], depth + 1))) await put('null');
    }
    await put(']');
  };
  const writeObject = async (o: Record<string, unknown>, depth: number) => {
    await put('{');
    let first = true;
    for (const k of Object.keys(o)) {
      const v = o[k];
      const head = `${first ? '' : ','}${JSON.stringify(k)}:`;
      if (depth + 1 < SPLIT_DEPTH && splittable(v)) {
        await put(head);
        await write(v, depth + 1);
      } else {
        // what JSON.stringify leaves out of an object (undefined, a function, a symbol, a toJSON answering undefined): no key either
        const s = JSON.stringify(v);
        if (s === undefined) continue;
        await put(head + s);
      }
      first = false;
    }
    await put('}');
  };
  if (!(await write(value, 0))) return Buffer.from('');
  chunks.push(Buffer.from(part));
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}
