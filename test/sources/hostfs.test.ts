/**
 * HostFs keeps every read inside the host root, resolving links as securejoin
 * does: absolute link targets and `..` are taken relative to the root, so
 * /var/run -> /run works and a link to /etc/shadow (or ../../..) cannot leave it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { HostFs, isGone } from '../../src/sources/hostfs/hostfs.js';
import { readInNoLink } from '../../src/sources/hostfs/safe-read.js';

const base = mkdtempSync(path.join(tmpdir(), 'nodetruth-hostfs-'));
t.teardown(() => rmSync(base, { recursive: true, force: true }));
const root = path.join(base, 'root');
const outside = path.join(base, 'outside');
mkdirSync(path.join(root, 'run/containerd'), { recursive: true });
mkdirSync(path.join(root, 'etc'), { recursive: true });
mkdirSync(path.join(root, 'var/lib'), { recursive: true });
mkdirSync(outside);
writeFileSync(path.join(root, 'run/containerd/marker'), 'inside-run\n');
writeFileSync(path.join(root, 'etc/shadow'), 'root-of-the-host-root\n');
writeFileSync(path.join(outside, 'secret'), 'CANARY\n');
writeFileSync(path.join(base, 'secret'), 'CANARY-base\n');
// Host-style links
symlinkSync('../run', path.join(root, 'var/run')); // Debian: /var/run -> /run (relative)
symlinkSync('/run', path.join(root, 'var/run-abs')); // absolute form
// Hostile links
symlinkSync(path.join(outside, 'secret'), path.join(root, 'etc/escape-abs')); // absolute path of a file outside
symlinkSync('../../../../../../../../../secret', path.join(root, 'etc/escape-rel')); // climbs past the root
symlinkSync('../../secret', path.join(root, 'etc/escape-base')); // from root/etc, the kernel would reach base/secret
symlinkSync(outside, path.join(root, 'var/lib/outdir')); // a directory outside
symlinkSync('loop-b', path.join(root, 'etc/loop-a'));
symlinkSync('loop-a', path.join(root, 'etc/loop-b'));

const fs = new HostFs(root);

t.test('plain reads, missing files', async (t) => {
  t.equal(await fs.readFile('/run/containerd/marker'), 'inside-run\n');
  t.equal(await fs.readFile('/run/containerd/nope'), null, 'missing file: null');
  t.equal(await fs.readFile('/no/such/dir/file'), null, 'missing directory: null');
  t.equal(await fs.resolve('/a/./b//c'), path.join(root, 'a/b/c'));
  t.equal(await fs.statfs('/no/such'), null);
  t.ok(await fs.statfs('/etc'));
  t.equal(await fs.exists('/etc/shadow'), true);
  t.equal(await fs.exists('/etc/none'), false);
});

t.test('.. stops at the root', async (t) => {
  t.equal(await fs.resolve('/../../../../etc/shadow'), path.join(root, 'etc/shadow'));
  t.equal(await fs.readFile('../../../etc/shadow'), 'root-of-the-host-root\n', 'relative host path with .. is clamped');
  t.equal(await fs.readFile('/run/../../../../secret'), null, 'base/secret beside the root is not reachable');
});

t.test('/var/run -> ../run and -> /run both land in the root', async (t) => {
  t.equal(await fs.readFile('/var/run/containerd/marker'), 'inside-run\n');
  t.equal(await fs.readFile('/var/run-abs/containerd/marker'), 'inside-run\n');
  t.equal(await fs.resolve('/var/run/containerd/containerd.sock'), path.join(root, 'run/containerd/containerd.sock'));
});

t.test('links pointing outside never leave the root', async (t) => {
  t.equal(await fs.resolve('/etc/escape-abs'), path.join(root, outside, 'secret'), 'absolute target re-rooted');
  t.equal(await fs.readFile('/etc/escape-abs'), null);
  t.equal(await fs.resolve('/etc/escape-rel'), path.join(root, 'secret'), 'climbing target clamped at the root');
  t.equal(await fs.readFile('/etc/escape-rel'), null);
  t.equal(await fs.readFile('/etc/escape-base'), null, 'one level above the root is not reachable');
  t.equal(await fs.readFile('/var/lib/outdir/secret'), null, 'a linked directory outside is re-rooted, not followed');
  const dir = await fs.dir('/var/lib/outdir');
  t.equal(dir.realPath, path.join(root, outside));
  t.equal(await fs.readdir(dir), null);
  t.equal(readFileSync(path.join(outside, 'secret'), 'utf8'), 'CANARY\n', 'the canary is still there, just never reached');
});

t.test('link loops end with ELOOP, not a hang', async (t) => {
  await t.rejects(fs.readFile('/etc/loop-a'), { code: 'ELOOP' });
});

t.test('NUL bytes and bad names are refused before any syscall', async (t) => {
  await t.rejects(fs.resolve('/etc/shadow\0.txt'), { code: 'EINVAL' });
  await t.rejects(fs.readFile('/etc\0/shadow'), { code: 'EINVAL' });
  const etc = await fs.dir('/etc');
  for (const bad of ['', '.', '..', 'a/b', '../shadow', 'x\0y']) {
    t.throws(() => fs.child(etc, bad), { code: 'EINVAL' }, `child ${JSON.stringify(bad)}`);
    await t.rejects(fs.readIn(etc, bad), { code: 'EINVAL' }, `readIn ${JSON.stringify(bad)}`);
  }
});

t.test('readIn opens the last component with O_NOFOLLOW', async (t) => {
  const etc = await fs.dir('/etc');
  t.equal(await fs.readIn(etc, 'shadow'), 'root-of-the-host-root\n');
  await t.rejects(fs.readIn(etc, 'escape-abs'), { code: 'ELOOP' }, 'a link is refused');
  t.equal(await readInNoLink(fs, etc, 'escape-abs'), null, 'readInNoLink: a planted link reads as absent');
  t.equal(await readInNoLink(fs, etc, 'shadow'), 'root-of-the-host-root\n');
  t.equal(await fs.readIn(etc, 'missing'), null);
  const child = fs.child(etc, 'sub');
  t.same(child, { hostPath: '/etc/sub', realPath: path.join(root, 'etc/sub') });
});

t.test('reads are bounded', async (t) => {
  writeFileSync(path.join(root, 'etc/big'), 'x'.repeat(200_000));
  t.equal((await fs.readFile('/etc/big', 1000))?.length, 1000);
  t.equal((await fs.readFile('/etc/big'))?.length, 200_000);
});

t.test('readlink reads the link itself (ns links, dangling targets)', async (t) => {
  symlinkSync('net:[4026531840]', path.join(root, 'etc/nslink'));
  t.equal(await fs.readlink('/etc/nslink'), 'net:[4026531840]');
  t.equal(await fs.readlink('/etc/shadow'), null, 'not a link: null');
  t.equal(await fs.readlink('/etc/none'), null);
});

t.test('root "/" reads the real filesystem', async (t) => {
  const real = new HostFs('/');
  // '/' resolves links too (securejoin-style, as any other root): /proc/self is a link to our pid
  t.equal(await real.resolve('/proc/self/../self/stat'), `/proc/${process.pid}/stat`);
  t.match(await real.readFile(`/proc/${process.pid}/stat`), new RegExp(`^${process.pid} \\(`));
});

t.test('isGone', async (t) => {
  for (const code of ['ENOENT', 'ENOTDIR', 'ESRCH']) t.ok(isGone({ code }), code);
  t.notOk(isGone({ code: 'EACCES' }));
  t.notOk(isGone(null));
  t.notOk(isGone('ENOENT'));
});

t.test('readFilesInSync: batch reads in a resolved dir, O_NOFOLLOW, missing as null', async (t) => {
  const { readFilesInSync } = await import('../../src/sources/hostfs/read-sync.js');
  const etc = await fs.dir('/etc');
  t.same(readFilesInSync(etc, ['shadow', 'missing', 'escape-abs', 'escape-rel']), ['root-of-the-host-root\n', null, null, null], 'links are not followed');
  t.equal(readFilesInSync(etc, ['big'], 10)[0], 'x'.repeat(10), 'bounded');
  t.equal(readFilesInSync(etc, ['big'])[0]?.length, 64 * 1024, 'never more than its buffer');
  for (const bad of ['', '..', 'a/b', 'x\0']) t.throws(() => readFilesInSync(etc, [bad]), { code: 'EINVAL' });
  t.same(readFilesInSync(await fs.dir('/no/such/dir'), ['a']), [null], 'a vanished directory');
  t.match(readFilesInSync(await new HostFs('/').dir(`/proc/${process.pid}`), ['stat'])[0], new RegExp(`^${process.pid} `), 'procfs');
});

t.test('openFile: a regular file inside the root (and inside `within`), or null, or a coded refusal', async (t) => {
  mkdirSync(path.join(root, 'var/log/real'), { recursive: true });
  writeFileSync(path.join(root, 'var/log/real/a.log'), 'a-log\n');
  symlinkSync('/etc', path.join(root, 'var/log/to-etc'));
  const read = async (p: string, within?: string) => {
    const fh = await fs.openFile(p, within === undefined ? {} : { within });
    if (fh === null) return null;
    try {
      return await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  };
  t.equal(await read('/var/log/real/a.log', '/var/log'), 'a-log\n');
  t.equal(await read('/etc/shadow'), 'root-of-the-host-root\n', 'no within: anywhere inside the root');
  t.equal(await read('/var/log/real/none.log', '/var/log'), null, 'missing: null');
  t.equal(await read('/etc/escape-abs'), null, 'an absolute link outside is re-rooted (and missing there)');
  await t.rejects(read('/var/log/to-etc/shadow', '/var/log'), { code: 'EXDEV' }, 'a directory link out of /var/log is refused');
  t.equal(await read('/var/log/to-etc/shadow'), 'root-of-the-host-root\n', 'without within it is the root\'s /etc');
  await t.rejects(read('/var/log/real', '/var/log'), { code: 'EFTYPE' }, 'a directory is not a regular file');
  await t.rejects(read('/etc/loop-a'), { code: 'ELOOP' });
});
