/** A rotated .gz log: decompressed as a stream with a bounded output (a gzip bomb is given up), keeping only its newest bytes. */
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { isSourceError } from '../errors.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { openLog, type OpenLog } from './paths.js';
import type { PodLogLimits } from './podlogs.js';

class GzipTooLarge extends Error {}

/** `buf`: the newest gzipTailBytes decompressed (headLost: older bytes were dropped), or why the file was skipped (stop: older files are not read either). */
export async function gunzipTail(fs: HostFs, limits: PodLogLimits, f: string): Promise<{ buf: Buffer; headLost: boolean } | { skip: string; stop: boolean }> {
  const name = path.posix.basename(f);
  let o: OpenLog | null;
  try {
    o = await openLog(fs, f);
  } catch (err) {
    if (!isSourceError(err)) throw err;
    return { skip: `${name} skipped: ${err.message}`, stop: false };
  }
  if (!o) return { skip: `${name} vanished while reading`, stop: false };
  const ring: Buffer[] = [];
  let ringBytes = 0;
  let total = 0;
  const max = limits.gzipMaxOutputBytes;
  const keep = limits.gzipTailBytes;
  try {
    await pipeline(o.fh.createReadStream({ start: 0, autoClose: false, highWaterMark: limits.chunkBytes }), createGunzip(), async (chunks: AsyncIterable<Buffer>) => {
      for await (const c of chunks) {
        total += c.length;
        if (total > max) throw new GzipTooLarge();
        ring.push(c);
        ringBytes += c.length;
        while (ringBytes - ring[0]!.length >= keep) ringBytes -= ring.shift()!.length;
      }
    });
  } catch (err) {
    if (err instanceof GzipTooLarge) return { skip: `${name}: decompresses to more than ${max} bytes; it and older files were not read`, stop: true };
    return { skip: `${name} skipped: not a readable gzip file (${(err as Error).message})`, stop: false };
  } finally {
    await o.fh.close();
  }
  let buf = Buffer.concat(ring, ringBytes);
  if (buf.length > keep) buf = buf.subarray(buf.length - keep);
  return { buf, headLost: buf.length < total };
}
