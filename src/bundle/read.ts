/**
 * Reading a bundle is reading untrusted input: a bundle may come
 * from anyone, made by anything. It is indexed into memory, never extracted:
 *
 * - only regular files; links, hard links, devices, FIFOs, directories refused;
 * - names: relative, no `..` or `.` or empty component, no backslash or NUL, only
 *   the characters our writer uses, at most MAX_NAME long; a duplicate is refused
 *   (two answers for one name would make the replay depend on order);
 * - bytes: the decompressed stream is counted as it is inflated and the read stops
 *   as soon as it passes the budget (a gzip bomb costs the budget, not the memory);
 *   entries at most MAX_ENTRIES; the manifest at most MAX_MANIFEST_BYTES, parsed as
 *   JSON and validated with zod. Nothing in it is ever executed or evaluated;
 * - nothing is written, and no path from the archive ever reaches the file system.
 */
import { createReadStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { extract as tarExtract, type Header } from 'tar-stream';
import { DEFAULT_READ_MAX_BYTES, MANIFEST_NAME, manifestSchema, MAX_ENTRIES, MAX_MANIFEST_BYTES, MAX_NAME, routeKey, type Manifest } from './format.js';

export class BundleError extends Error {
  override name = 'BundleError';
}

export interface StoredAnswer {
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
}

export interface Bundle {
  file: string;
  manifest: Manifest;
  /** every entry by name (raw evidence included) */
  entries: Map<string, Buffer>;
  /** route answers by routeKey */
  routes: Map<string, StoredAnswer>;
  /** decompressed bytes read */
  bytes: number;
}

const NAME_CHARS = /^[A-Za-z0-9._=&@/%+:-]+$/;

/** Why an entry name is refused, or null when it is acceptable. */
function badName(name: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'an empty name';
  if (name.length > MAX_NAME) return `a name longer than ${MAX_NAME} characters`;
  if (name.includes('\0')) return 'a NUL byte in the name';
  if (name.includes('\\')) return 'a backslash in the name';
  if (name.startsWith('/')) return 'an absolute path';
  const parts = name.split('/');
  if (parts.some((p) => p === '..')) return 'a ".." component';
  if (parts.some((p) => p === '.' || p === '')) return 'an empty or "." component';
  if (!NAME_CHARS.test(name)) return 'characters no bundle writer uses';
  return null;
}

const TYPE_WORD: Record<string, string> = {
  link: 'a hard link',
  symlink: 'a symbolic link',
  directory: 'a directory',
  'block-device': 'a block device',
  'character-device': 'a character device',
  fifo: 'a FIFO',
  'contiguous-file': 'a contiguous file',
};

/** Counts inflated bytes and fails the stream the moment they pass the budget. */
class Budget extends Transform {
  bytes = 0;
  constructor(private readonly max: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    // the archive's end blocks (1 KiB) and the manifest's slack ride on top of the budget
    if (this.bytes > this.max + 64 * 1024) cb(new BundleError(`decompressed size passes the ${this.max}-byte budget (--max-size); refused`));
    else cb(null, chunk);
  }
}

/** Read and index a bundle file; throws BundleError with a clear reason when it is refused. */
export async function readBundle(file: string, opts: { maxBytes?: number } = {}): Promise<Bundle> {
  const max = opts.maxBytes ?? DEFAULT_READ_MAX_BYTES;
  const entries = new Map<string, Buffer>();
  const budget = new Budget(max);
  const extract = tarExtract();
  let total = 0;
  const refuse = (header: Header, why: string) => new BundleError(`refused: entry ${JSON.stringify(String(header.name).slice(0, 200))} is ${why}`);

  const indexing = (async () => {
    for await (const entry of extract) {
      const h = entry.header;
      if (h.type !== 'file') throw refuse(h, TYPE_WORD[h.type] ?? `of type ${String(h.type)}`);
      const why = badName(h.name);
      if (why) throw refuse(h, why);
      if (entries.has(h.name)) throw refuse(h, 'a duplicate name');
      if (entries.size >= MAX_ENTRIES) throw new BundleError(`refused: more than ${MAX_ENTRIES} entries`);
      if (h.size < 0 || total + h.size > max) throw new BundleError(`refused: entries pass the ${max}-byte budget (--max-size) at ${JSON.stringify(h.name)}`);
      if (h.name === MANIFEST_NAME && h.size > MAX_MANIFEST_BYTES) throw refuse(h, `a manifest over ${MAX_MANIFEST_BYTES} bytes`);
      const chunks: Buffer[] = [];
      let n = 0;
      for await (const c of entry as AsyncIterable<Buffer>) {
        n += c.length;
        if (n > h.size) throw refuse(h, 'longer than its header says');
        chunks.push(c);
      }
      total += n;
      entries.set(h.name, Buffer.concat(chunks, n));
    }
  })();
  try {
    await Promise.all([pipeline(createReadStream(file), createGunzip(), budget, extract), indexing]);
  } catch (err) {
    extract.destroy();
    if (err instanceof BundleError) throw err;
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT' || e.code === 'EACCES' || e.code === 'EISDIR') throw new BundleError(`cannot read ${file}: ${e.code}`);
    if (e.code?.startsWith('Z_')) throw new BundleError(`${file} is not a gzip'd bundle: ${e.message}`);
    throw new BundleError(`${file} is not a readable tar.gz bundle: ${e.message}`);
  }

  const raw = entries.get(MANIFEST_NAME);
  if (!raw) throw new BundleError(`refused: ${file} has no ${MANIFEST_NAME}; not a nodetruth bundle`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new BundleError(`refused: ${MANIFEST_NAME} is not JSON: ${(err as Error).message}`);
  }
  const m = manifestSchema.safeParse(parsed);
  if (!m.success) throw new BundleError(`refused: ${MANIFEST_NAME} is not a nodetruth bundle manifest: ${m.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const manifest = m.data;

  const routes = new Map<string, StoredAnswer>();
  for (const s of manifest.sections) {
    if (s.kind !== 'route' || s.path === undefined || s.status === undefined) continue;
    const body = entries.get(s.path);
    if (!body) continue; // named but absent: served as not captured
    const key = routeKey(s.name);
    if (routes.has(key)) throw new BundleError(`refused: two stored answers for ${JSON.stringify(s.name.slice(0, 200))}`);
    routes.set(key, { url: s.name, status: s.status, contentType: s.contentType ?? 'application/octet-stream', body });
  }
  return { file, manifest, entries, routes, bytes: budget.bytes };
}
