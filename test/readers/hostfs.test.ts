/**
 * HostFs keeps every read inside the host root, resolving links as securejoin
 * does: absolute link targets and `..` are taken relative to the root, so
 * /var/run -> /run works and a link to /etc/shadow (or ../../..) cannot leave it.
 */
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { HostFs, isGone } from '../../src/readers/hostfs/hostfs.js';
import { readInNoLink } from '../../src/readers/hostfs/safe-read.js';

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
  // a device is named (O_PATH), never opened: opening some (/dev/watchdog) has effects
  await t.rejects(real.openFile('/dev/null'), { code: 'EFTYPE' });
  await t.rejects(real.readFile('/dev/zero'), { code: 'EFTYPE' }, 'readFile: regular files only');
  t.equal(await real.readlink(`/proc/${process.pid}/ns/net`), readlinkSync(`/proc/${process.pid}/ns/net`), 'ns links through a verified parent');
  t.equal(await real.exists('/proc/self/stat'), true);
});

t.test('isGone', async (t) => {
  for (const code of ['ENOENT', 'ENOTDIR', 'ESRCH']) t.ok(isGone({ code }), code);
  t.notOk(isGone({ code: 'EACCES' }));
  t.notOk(isGone(null));
  t.notOk(isGone('ENOENT'));
});

t.test('readFilesInSync: batch reads in a resolved dir, O_NOFOLLOW, missing as null', async (t) => {
  const { readFilesInSync } = await import('../../src/readers/hostfs/read-sync.js');
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

/*
 * Containment against links swapped in after a path was resolved: the kernel's name for
 * each fd is checked, so a read through a swapped link is refused (EXDEV) or reads as gone,
 * and no byte of the canary outside ever comes back.
 */
t.test('a directory swapped for a link after it was resolved: every reader refuses it', async (t) => {
  const { renameSync } = await import('node:fs');
  const { readFilesInSync } = await import('../../src/readers/hostfs/read-sync.js');
  const out = path.join(base, 'swap-outside');
  mkdirSync(path.join(out, 'sub'), { recursive: true });
  for (const f of ['f', 'sub/f']) writeFileSync(path.join(out, f), 'CANARY-swap\n');
  symlinkSync('net:[1]', path.join(out, 'sub/lnk'));
  const d = path.join(root, 'swap/d');
  mkdirSync(path.join(d, 'sub'), { recursive: true });
  writeFileSync(path.join(d, 'f'), 'inside\n');
  writeFileSync(path.join(d, 'sub/f'), 'inside\n');
  symlinkSync('net:[2]', path.join(d, 'sub/lnk'));
  const dir = await fs.dir('/swap/d');
  const sub = await fs.dir('/swap/d/sub');
  t.equal(await fs.readIn(dir, 'f'), 'inside\n');
  t.same(readFilesInSync(sub, ['f']), ['inside\n']);
  const { readdirInSync } = await import('../../src/readers/hostfs/read-sync.js');
  t.same(
    readdirInSync(sub)!.map((e) => [e.name, e.isDirectory(), e.isSymbolicLink()]).sort(),
    [['f', false, false], ['lnk', false, true]],
    'readdirInSync: the entries with their types',
  );
  t.equal(readdirInSync(await fs.dir('/no/such/dir')), null, 'readdirInSync: a missing directory');
  // the swap: /swap/d becomes a link to a directory outside the root (absolute, as a tenant would plant it)
  renameSync(d, `${d}.real`);
  symlinkSync(out, d);
  t.teardown(() => {
    rmSync(d);
    renameSync(`${d}.real`, d);
  });
  // last component swapped: opened with O_NOFOLLOW, it reads as gone
  t.equal(await fs.readIn(dir, 'f').catch((e: NodeJS.ErrnoException) => e.code), 'EXDEV', 'readIn: the fd is not at <dir>/f');
  t.equal(await fs.readdir(dir), null, 'readdir: the directory itself is a link now');
  t.throws(() => readFilesInSync(dir, ['f']), { code: 'EXDEV' }, 'readFilesInSync: the directory itself is a link now (the fd of its first file is outside)');
  // an intermediate component swapped: the kernel would follow it, the fd check refuses
  await t.rejects(fs.readIn(sub, 'f'), { code: 'EXDEV' }, 'readIn below the swapped directory');
  await t.rejects(fs.readdir(sub), { code: 'EXDEV' }, 'readdir below the swapped directory');
  t.throws(() => readFilesInSync(sub, ['f']), { code: 'EXDEV' }, 'readFilesInSync below the swapped directory');
  t.equal(readdirInSync(dir), null, 'readdirInSync: the directory itself is a link now');
  t.throws(() => readdirInSync(sub), { code: 'EXDEV' }, 'readdirInSync below the swapped directory');
  t.throws(() => readdirInSync(fs.child(dir, 'sub')), { code: 'EXDEV' }, 'readdirInSync: a child() never resolved is checked when read');
  const kids = fs.child(dir, 'sub');
  t.throws(() => readFilesInSync(kids, ['f']), { code: 'EXDEV' }, 'a child() never resolved is checked when read');
  // a resolve after the swap re-roots the link: the root's (missing) copy, never the outside
  t.equal(await fs.readFile('/swap/d/f'), null);
  t.equal(await fs.readlink('/swap/d/sub/lnk'), null, 'readlink: the re-rooted parent is missing');
  t.equal(await fs.exists('/swap/d/sub/f'), false);
  t.equal(await fs.statfs('/swap/d/sub'), null);
  t.equal(readFileSync(path.join(out, 'f'), 'utf8'), 'CANARY-swap\n', 'the canary is there to be read, and was not');
});

t.test('root "/": the hostile tree under a temp dir, queried with `within`', async (t) => {
  const real = new HostFs('/');
  const b = mkdtempSync(path.join(tmpdir(), 'nodetruth-hostfs-slash-'));
  t.teardown(() => rmSync(b, { recursive: true, force: true }));
  const log = path.join(b, 'log');
  const out = path.join(b, 'outside');
  mkdirSync(path.join(log, 'app'), { recursive: true });
  mkdirSync(path.join(out, 'deeper'), { recursive: true });
  writeFileSync(path.join(log, 'app/a.log'), 'app-line\n');
  writeFileSync(path.join(out, 'secret'), 'CANARY-slash\n');
  symlinkSync(out, path.join(log, 'abs')); // absolute link to a directory outside
  symlinkSync('../outside', path.join(log, 'rel')); // relative link climbing out
  symlinkSync('../outside/deeper', path.join(log, 'deep')); // `..` after the link: deeper/.. is outside
  symlinkSync('app/../../outside', path.join(log, 'dotdot')); // `..` inside the target
  symlinkSync('/etc', path.join(log, 'etc')); // the shape of the finding: /var/log/foo -> /etc
  symlinkSync('app', path.join(log, 'inner')); // a link that stays inside is fine
  const open = async (p: string) => {
    const fh = await real.openFile(p, { within: log });
    if (fh === null) return null;
    try {
      return await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  };
  t.equal(await open(`${log}/app/a.log`), 'app-line\n');
  t.equal(await open(`${log}/inner/a.log`), 'app-line\n', 'a link inside the subtree is followed');
  for (const p of ['abs/secret', 'rel/secret', 'deep/../secret', 'dotdot/secret', 'etc/hostname', 'etc/os-release', 'app/../../outside/secret']) {
    await t.rejects(open(`${log}/${p}`), { code: 'EXDEV' }, p);
  }
  await t.rejects(real.dir(`${log}/abs`, { within: log }), { code: 'EXDEV' }, 'dir() with within');
  t.equal((await real.dir(`${log}/app`, { within: log })).realPath, `${log}/app`);
  t.equal(await real.resolve(`${log}/deep/../secret`), `${out}/secret`, '.. after a link pops the link target, as the kernel does');
  // without `within`, '/' is the whole host: the same file is simply the host's
  t.equal(await real.readFile(`${log}/rel/secret`), 'CANARY-slash\n');
});

t.test('a link raced against every reader: no byte from outside is ever returned', async (t) => {
  const { Worker } = await import('node:worker_threads');
  const { readFilesInSync } = await import('../../src/readers/hostfs/read-sync.js');
  const CANARY = 'CANARY-race';
  const out = path.join(base, 'race-outside');
  mkdirSync(out);
  writeFileSync(path.join(out, 'f'), `${CANARY}\n`);
  writeFileSync(path.join(out, 'outside-entry'), `${CANARY}\n`);
  symlinkSync('net:[outside]', path.join(out, 'lnk'));
  const d = path.join(root, 'var/log/race');
  mkdirSync(d, { recursive: true });
  writeFileSync(path.join(d, 'f'), 'inside\n');
  symlinkSync('net:[inside]', path.join(d, 'lnk'));
  // the swapper: /var/log/race alternates between the real directory and a link to `out`
  const stop = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(
    `const { renameSync, symlinkSync } = require('node:fs');
     const { workerData: w } = require('node:worker_threads');
     symlinkSync(w.out, w.d + '.lnk');
     let swaps = 0;
     while (Atomics.load(w.stop, 0) === 0 && swaps < 2000000) {
       renameSync(w.d, w.d + '.real'); renameSync(w.d + '.lnk', w.d);
       renameSync(w.d, w.d + '.lnk'); renameSync(w.d + '.real', w.d);
       swaps++;
     }
     Atomics.store(w.stop, 1, swaps);`,
    { eval: true, workerData: { d, out, stop } },
  );
  const ended = new Promise((resolve) => worker.once('exit', resolve));
  const dir = await fs.dir('/var/log/race');
  const seen: Record<string, number> = {};
  const note = (what: string, v: unknown) => {
    const got = v instanceof Refused ? v.code : typeof v === 'string' ? (v.includes(CANARY) ? 'CANARY' : v.includes('outside') ? 'OUTSIDE' : 'inside') : String(v);
    seen[`${what}: ${got}`] = (seen[`${what}: ${got}`] ?? 0) + 1;
  };
  class Refused {
    constructor(readonly code: string) {}
  }
  const code = (e: NodeJS.ErrnoException) => new Refused(e.code ?? 'error');
  try {
    for (let i = 0; i < 1500; i++) {
      const fh = await fs.openFile('/var/log/race/f', { within: '/var/log' }).catch(code);
      if (fh !== null && !(fh instanceof Refused)) {
        note('openFile', await fh.readFile('utf8'));
        await fh.close();
      } else note('openFile', fh);
      note('readFile', await fs.readFile('/var/log/race/f').catch(code));
      note('readIn', await fs.readIn(dir, 'f').catch(code));
      const names = await fs.readdir(dir).catch(code);
      note('readdir', Array.isArray(names) ? names.map((e) => e.name).join(',') : names);
      note('readlink', await fs.readlink('/var/log/race/lnk').catch(code));
      // readFilesInSync checks a batch's first file by its fd and trusts the directory for the
      // microseconds until its other opens (read-sync.ts says why: it is for cgroupfs/procfs,
      // where no link can be swapped in): a batch of one file is checked whole
      try {
        note('readFilesInSync', readFilesInSync(dir, ['f'])[0]);
      } catch (e) {
        note('readFilesInSync', code(e as NodeJS.ErrnoException));
      }
    }
  } finally {
    Atomics.store(stop, 0, 1);
    await ended;
  }
  t.comment(`${Atomics.load(stop, 1)} swaps; outcomes ${JSON.stringify(seen)}`);
  const leaked = Object.keys(seen).filter((k) => k.endsWith('CANARY') || k.endsWith('OUTSIDE'));
  t.same(leaked, [], 'no reader returned a byte (or a name) from outside the root');
  t.ok(Object.keys(seen).some((k) => k.endsWith('inside')), 'the inside file was read when it was there');
  t.same(Object.keys(seen).filter((k) => !/: (inside|null|CANARY|OUTSIDE|EXDEV|ELOOP)$/.test(k)), [], 'no other outcome (a 500 in a route)');
});
