/**
 * Reading a bundle is reading untrusted input. Archives made
 * here with tar-stream, each beside a valid manifest so only the hostile entry can
 * be what refuses it: `..`, absolute paths, symbolic and hard links (to a canary
 * file outside), devices, a FIFO, a directory, duplicate names, a decompressed
 * size past the budget (a gzip bomb: 200 MiB of zeros in ~200 KiB), more bytes than
 * a header says, not gzip, no manifest, a manifest that is not one. Each is refused
 * with a clear BundleError; nothing is written beside the bundle, the canary is
 * untouched and its content appears in no message.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createGzip, gzipSync } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import t, { type Test } from 'tap';
import { pack, type Header } from 'tar-stream';
import { FORMAT_VERSION, type Manifest } from '../../src/bundle/format.js';
import { BundleError, readBundle } from '../../src/bundle/read.js';
import { serveBundleMain } from '../../src/bundle/cli.js';
import { ConfigError } from '../../src/config.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-hostile-bundle-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const canaryContent = `CANARY-${randomBytes(16).toString('hex')}`;
const canary = path.join(dir, 'canary.txt');
writeFileSync(canary, canaryContent);

const manifest = (): Manifest => ({
  kind: 'nodetruth-bundle',
  formatVersion: FORMAT_VERSION,
  version: '0.1.0',
  node: 'hostile',
  capturedAt: '2026-12-01T00:00:00.000Z',
  finishedAt: '2026-12-01T00:00:01.000Z',
  argv: [],
  hostRoot: '/',
  since: '2026-11-30T23:00:00.000Z',
  maxBytes: 1,
  bytes: 0,
  trimOrder: [],
  trimmed: [],
  redaction: { marker: '<redacted>', total: 0, byKind: {}, policy: '' },
  sections: [{ kind: 'route', name: '/v1/pods', source: { route: '/v1/pods' }, path: 'api/v1/pods.json', status: 200, contentType: 'application/json; charset=utf-8', time: '', ms: 0, bytes: 2, redacted: 0 }],
});

type Item = { header: Partial<Header> & { name: string }; body?: Buffer };
let n = 0;
async function archive(items: Item[], withManifest = true): Promise<string> {
  const file = path.join(dir, `b${n++}.tar.gz`);
  const p = pack();
  const done = pipeline(p, createGzip(), createWriteStream(file));
  const all: Item[] = [{ header: { name: 'api/v1/pods.json' }, body: Buffer.from('{}') }, ...items];
  if (withManifest) all.push({ header: { name: 'manifest.json' }, body: Buffer.from(JSON.stringify(manifest())) });
  for (const it of all) {
    await new Promise<void>((resolve, reject) => p.entry({ type: 'file', ...it.header, ...(it.body ? { size: it.body.length } : {}) } as Header, it.body ?? Buffer.alloc(0), (e) => (e ? reject(e) : resolve())));
  }
  p.finalize();
  await done;
  return file;
}

const before = () => readdirSync(dir).sort();

async function refused(t: Test, file: string, why: RegExp, opts: { maxBytes?: number } = {}) {
  const listing = before();
  const err = await readBundle(file, opts).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof BundleError, `refused with a BundleError: ${(err as Error)?.message}`);
  t.match((err as Error).message, why);
  t.notOk(String((err as Error).message).includes(canaryContent), 'the canary content is in no message');
  t.same(before(), listing, 'nothing written beside the bundle');
  t.equal(readFileSync(canary, 'utf8'), canaryContent, 'the canary is untouched');
}

t.test('a well-formed archive is read (the control case)', async (t) => {
  const b = await readBundle(await archive([]));
  t.equal(b.routes.get('/v1/pods')!.body.toString(), '{}');
});

t.test('hostile names', async (t) => {
  await refused(t, await archive([{ header: { name: '../canary.txt' }, body: Buffer.from('x') }]), /".." component/);
  await refused(t, await archive([{ header: { name: 'api/../../canary.txt' }, body: Buffer.from('x') }]), /".." component/);
  await refused(t, await archive([{ header: { name: canary }, body: Buffer.from('x') }]), /absolute path/);
  await refused(t, await archive([{ header: { name: 'api\\..\\x' }, body: Buffer.from('x') }]), /backslash/);
  await refused(t, await archive([{ header: { name: 'api//x' }, body: Buffer.from('x') }]), /empty or "\." component/);
  await refused(t, await archive([{ header: { name: 'api/v1/pods.json' }, body: Buffer.from('{"dup":1}') }]), /duplicate name/);
});

t.test('links, devices, FIFOs and directories', async (t) => {
  await refused(t, await archive([{ header: { name: 'raw/kmsg.ndjson', type: 'symlink', linkname: canary } }]), /symbolic link/);
  await refused(t, await archive([{ header: { name: 'raw/kmsg.ndjson', type: 'link', linkname: '../canary.txt' } }]), /hard link/);
  await refused(t, await archive([{ header: { name: 'raw/mem', type: 'character-device', devmajor: 1, devminor: 1 } }]), /character device/);
  await refused(t, await archive([{ header: { name: 'raw/sda', type: 'block-device', devmajor: 8, devminor: 0 } }]), /block device/);
  await refused(t, await archive([{ header: { name: 'raw/pipe', type: 'fifo' } }]), /FIFO/);
  await refused(t, await archive([{ header: { name: 'raw', type: 'directory' } }]), /directory/);
});

t.test('sizes past the budget: entries, and a gzip bomb refused while inflating', async (t) => {
  await refused(t, await archive([{ header: { name: 'raw/big' }, body: Buffer.alloc(3 * 2 ** 20) }]), /budget/, { maxBytes: 2 ** 20 });
  // 200 MiB of zeros inflate from ~200 KiB: refused at the 128 MiB default budget, never held
  const bomb = path.join(dir, 'bomb.tar.gz');
  const z = createGzip({ level: 9 });
  const done = pipeline(z, createWriteStream(bomb));
  const zeros = Buffer.alloc(2 ** 20);
  for (let i = 0; i < 200; i++) if (!z.write(zeros)) await new Promise((r) => z.once('drain', r));
  z.end();
  await done;
  const heap = process.memoryUsage().heapUsed;
  await refused(t, bomb, /budget|not a readable/);
  t.comment(`heap after the bomb: +${((process.memoryUsage().heapUsed - heap) / 2 ** 20).toFixed(1)} MiB (a figure, not an assert)`);
});

t.test('not a bundle', async (t) => {
  const plain = path.join(dir, 'plain.tar.gz');
  writeFileSync(plain, 'not gzip at all');
  await refused(t, plain, /not a gzip'd bundle|not a readable/);
  await refused(t, await archive([], false), /no manifest\.json/);
  const garbage = path.join(dir, 'garbage.tar.gz');
  writeFileSync(garbage, gzipSync(Buffer.alloc(10_000, 0x41)));
  await refused(t, garbage, /not a readable|not a nodetruth/);
  const p = pack();
  const file = path.join(dir, 'badmanifest.tar.gz');
  const done = pipeline(p, createGzip(), createWriteStream(file));
  p.entry({ name: 'manifest.json' }, '{"kind":"something-else","__proto__":{"polluted":1}}');
  p.finalize();
  await done;
  await refused(t, file, /not a nodetruth bundle manifest/);
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype pollution');
  await refused(t, path.join(dir, 'missing.tar.gz'), /cannot read/);
});

t.test('serve --bundle refuses a hostile bundle with the reason, before listening', async (t) => {
  const file = await archive([{ header: { name: '../canary.txt' }, body: Buffer.from('x') }]);
  await t.rejects(serveBundleMain(['--bundle', file, '--listen', '127.0.0.1:0']), ConfigError);
  await t.rejects(serveBundleMain(['--bundle', file]), /--bundle: refused: entry "\.\.\/canary\.txt" is a "\.\." component/);
});
