// The linux/arm64 image, run under emulation on this (amd64) machine:
//
//   node --import tsx test/e2e/arm64.ts          # npm run test:e2e:arm64
//
// README's build command (scripts/build-image.sh, no NODETRUTH_IMAGE_ARCHES) makes the
// amd64 and arm64 images and the multi-arch archive of both; this checks that the index
// names both platforms, unpacks the arm64 image's layers into a root filesystem, and runs
// the image's own entrypoint in it through chroot, where binfmt_misc hands every aarch64
// binary to qemu-aarch64-static (registered with the F flag by build-image.sh):
//   `nodetruth version`,
//   `nodetruth capture` of a fixture host root (test/fixtures/hosts/eks, at the image's
//   /host), a real bundle made by the arm64 agent,
//   `nodetruth serve --bundle` of it on a loopback port: /readyz answers 200 and
//   /v1/node is the bundle's; then SIGTERM to its PID and a clean exit.
// Needs root (the image build and chroot do); without it, it says so and skips.
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, closeSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { allArchArchives } from './agent-image.js';
import { log, run, sleep } from './util.js';
import { projectRoot } from './vm.js';

interface Descriptor {
  mediaType: string;
  digest: string;
  platform?: { architecture: string; os: string };
  annotations?: Record<string, string>;
}
interface ImageConfig {
  architecture: string;
  os: string;
  config: { Env?: string[]; Entrypoint?: string[] };
}

if (process.getuid?.() !== 0) {
  log('arm64 image check skipped: it needs root (scripts/build-image.sh builds as root; the image runs in a chroot)');
  process.exit(0);
}
assert.ok(existsSync('/usr/bin/qemu-aarch64-static'), 'no /usr/bin/qemu-aarch64-static: install qemu-user-static (test/e2e/APT_PACKAGES)');

const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string };
const started = Date.now();
const built = await allArchArchives();
log(`images: ${built.ms} ms (${built.arm64}, ${built.multiarch})`);

const work = mkdtempSync(join(tmpdir(), 'nodetruth-arm64-'));
let agent: number | undefined;
process.on('exit', () => {
  if (agent !== undefined) {
    try {
      process.kill(agent, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  rmSync(work, { recursive: true, force: true });
});

/** An OCI archive's index and a blob reader over its unpacked layout. */
function layout(archive: string, dir: string): { index: { manifests: Descriptor[] }; blob: (d: string) => string } {
  mkdirSync(dir);
  execFileSync('tar', ['-xf', archive, '-C', dir]);
  const blob = (digest: string) => join(dir, 'blobs', 'sha256', digest.slice('sha256:'.length));
  return { index: JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as { manifests: Descriptor[] }, blob };
}

// The multi-arch archive: one index, one entry per platform.
{
  const { index, blob } = layout(built.multiarch, join(work, 'multi'));
  const top = index.manifests.length === 1 && /index|list/.test(index.manifests[0]!.mediaType) ? (JSON.parse(readFileSync(blob(index.manifests[0]!.digest), 'utf8')) as { manifests: Descriptor[] }) : index;
  const platforms = top.manifests.map((m) => `${m.platform?.os}/${m.platform?.architecture}`).sort();
  assert.deepEqual(platforms, ['linux/amd64', 'linux/arm64'], `the multi-arch archive's index: ${JSON.stringify(top.manifests)}`);
  rmSync(join(work, 'multi'), { recursive: true, force: true });
}

// The arm64 image's layers, in order, into a root filesystem. A whiteout (.wh.NAME) removes
// NAME of the layers below, an opaque whiteout (.wh..wh..opq) its directory's lower contents.
const rootfs = join(work, 'rootfs');
mkdirSync(rootfs);
const { index, blob } = layout(built.arm64, join(work, 'oci'));
assert.equal(index.manifests.length, 1);
const manifest = JSON.parse(readFileSync(blob(index.manifests[0]!.digest), 'utf8')) as { config: Descriptor; layers: Descriptor[] };
const config = JSON.parse(readFileSync(blob(manifest.config.digest), 'utf8')) as ImageConfig;
assert.equal(`${config.os}/${config.architecture}`, 'linux/arm64', 'the arm64 archive holds a linux/arm64 image');
for (const layer of manifest.layers) {
  const gz = layer.mediaType.endsWith('+gzip') ? ['-z'] : [];
  const names = execFileSync('tar', [...gz, '-tf', blob(layer.digest)], { maxBuffer: 256 << 20, encoding: 'utf8' }).split('\n');
  for (const name of names) {
    const base = name.split('/').at(-1) ?? '';
    if (!base.startsWith('.wh.')) continue;
    const dir = join(rootfs, dirname(name));
    if (base === '.wh..wh..opq') rmSync(dir, { recursive: true, force: true });
    else rmSync(join(dir, base.slice('.wh.'.length)), { recursive: true, force: true });
  }
  execFileSync('tar', [...gz, '-xf', blob(layer.digest), '-C', rootfs, '--exclude=.wh.*', '--numeric-owner']);
}
rmSync(join(work, 'oci'), { recursive: true, force: true });

// The node the image runs is an aarch64 ELF (e_machine 183 at offset 18).
{
  const fd = openSync(join(rootfs, 'usr/local/bin/node'), 'r');
  const head = Buffer.alloc(20);
  readSync(fd, head, 0, 20, 0);
  closeSync(fd);
  assert.equal(head.readUInt16LE(18), 183, 'the image\'s /usr/local/bin/node is an aarch64 binary');
}

// The image's environment and entrypoint, as a container runtime would use them.
const env: Record<string, string> = {};
for (const kv of config.config.Env ?? []) env[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
const entrypoint = config.config.Entrypoint ?? [];
assert.deepEqual(entrypoint, ['nodetruth']);
const inImage = (args: string[]): [string, string[]] => ['chroot', [rootfs, '/usr/bin/env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...entrypoint, ...args]];

const version = await run(...inImage(['version']), { timeoutMs: 5 * 60_000 });
assert.equal(version.code, 0, `nodetruth version under emulation: ${version.stderr}`);
assert.equal(version.stdout, `nodetruth ${pkg.version}\n`);
log(`nodetruth version (arm64, emulated): ${version.ms} ms`);

// A real bundle of a fixture host root, captured by the arm64 agent itself.
cpSync(join(projectRoot, 'test/fixtures/hosts/eks'), join(rootfs, 'host'), { recursive: true });
const source = ['--host-root', '/host', '--kmsg-path', '/nonexistent/kmsg', '--journalctl', '/nonexistent/journalctl', '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--node-name', 'arm64-node'];
const capture = await run(...inImage(['capture', ...source, '--since', '1h', '-o', '/tmp/arm64.tar.gz']), { timeoutMs: 10 * 60_000 });
assert.equal(capture.code, 0, `nodetruth capture under emulation: ${capture.stdout}\n${capture.stderr}`);
assert.ok(existsSync(join(rootfs, 'tmp/arm64.tar.gz')), 'capture wrote its bundle');
log(`nodetruth capture (arm64, emulated): ${capture.ms} ms`);

const port = await new Promise<number>((resolve, reject) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => resolve(p));
  });
  s.on('error', reject);
});
const [cmd, args] = inImage(['serve', '--bundle', '/tmp/arm64.tar.gz', '--listen', `127.0.0.1:${port}`]);
// chroot execs the agent: this PID is the emulated node process itself.
const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
agent = child.pid;
let output = '';
const keep = (d: string) => (output = (output + d).slice(-8000));
child.stdout.setEncoding('utf8').on('data', keep);
child.stderr.setEncoding('utf8').on('data', keep);
const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.once('close', (code, signal) => r({ code, signal })));
const base = `http://127.0.0.1:${port}`;
const serveStarted = Date.now();
let ready: Response | null = null;
while (Date.now() - serveStarted < 180_000 && child.exitCode === null) {
  ready = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(10_000) }).catch(() => null);
  if (ready?.status === 200) break;
  await sleep(500);
}
assert.equal(ready?.status, 200, `serve --bundle under emulation answers /readyz 200 (got ${ready?.status ?? 'no answer'}): ${output}`);
log(`nodetruth serve --bundle (arm64, emulated): /readyz 200 after ${Date.now() - serveStarted} ms`);
const health = (await (await fetch(`${base}/healthz`)).json()) as { version: string };
assert.equal(health.version, pkg.version);
const node = await fetch(`${base}/v1/node`);
assert.equal(node.status, 200, '/v1/node from the bundle');
assert.equal(typeof ((await node.json()) as { observedAt?: unknown }).observedAt, 'string');
assert.match(output, /serving a BUNDLE, not a live node: node arm64-node/, 'it serves the bundle the arm64 agent captured');

process.kill(child.pid!, 'SIGTERM');
const end = await Promise.race([exited, sleep(30_000).then(() => null)]);
assert.deepEqual(end, { code: 0, signal: null }, `SIGTERM: the emulated agent exits cleanly: ${output}`);
agent = undefined;
log(`arm64 image: ok in ${((Date.now() - started) / 1000).toFixed(1)} s`);
