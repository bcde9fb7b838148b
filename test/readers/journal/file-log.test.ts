/**
 * A node log file query (`/v1/logs?query=foo/<name>`) must stay
 * inside /var/log of the host root, through every component, whatever --host-root is.
 * Through a directory link /var/log/foo -> /etc a lexical check alone reads /etc/<name>.
 * Real symlink trees, the real HTTP server on 127.0.0.1:0, canaries that must never show.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { readLogFile } from '../../../src/readers/journal/file-log.js';
import { JOURNAL_LIMITS } from '../../../src/readers/journal/limits.js';
import { testApp } from '../../helpers/app.js';
import { getText } from '../../helpers/http.js';

const CANARY = `CANARY-${randomBytes(6).toString('hex')}`;
const base = mkdtempSync(path.join(tmpdir(), 'nodetruth-file-log-'));
t.teardown(() => rmSync(base, { recursive: true, force: true }));
const outside = path.join(base, 'outside');
mkdirSync(outside);
writeFileSync(path.join(outside, 'secret'), `${CANARY}\n`);

async function serve(flags: string[]) {
  const ta = await testApp(flags);
  await ta.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = ta.app.server.address() as AddressInfo;
  const get = (q: string) => getText({ host: '127.0.0.1', port, path: `/v1/logs?query=${encodeURIComponent(q)}` });
  return { ta, get };
}

t.test('--host-root <temp dir>: directory links out of /var/log are refused with 400, never read', async (t) => {
  const root = path.join(base, 'root');
  mkdirSync(path.join(root, 'var/log/app'), { recursive: true });
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(path.join(root, 'var/log/app/a.log'), 'one\ntwo\n');
  writeFileSync(path.join(root, 'etc/hostname'), `${CANARY}-root-etc\n`);
  symlinkSync('/etc', path.join(root, 'var/log/foo')); // the finding: re-rooted, it is <root>/etc
  symlinkSync('../../etc', path.join(root, 'var/log/rel')); // relative, to the root's /etc
  symlinkSync(outside, path.join(root, 'var/log/abs-out')); // absolute path outside the root
  symlinkSync('../../../../../../outside', path.join(root, 'var/log/climb')); // climbs past the root
  symlinkSync('app', path.join(root, 'var/log/inner')); // stays inside /var/log: fine
  execFileSync('mkfifo', [path.join(root, 'var/log/app/fifo.log')]); // opening it for reading would wait for a writer
  const { ta, get } = await serve(['--host-root', root]);
  t.teardown(() => ta.close());

  const ok = await get('app/a.log');
  t.equal(ok.status, 200, ok.body);
  t.same(JSON.parse(ok.body).lines, ['one', 'two']);
  t.same(JSON.parse((await get('inner/a.log')).body).lines, ['one', 'two'], 'a link inside /var/log is followed');
  for (const q of ['foo/hostname', 'rel/hostname', 'abs-out/secret', 'climb/secret', '/var/log/foo/hostname']) {
    const r = await get(q);
    t.equal(r.status, 400, `${q}: ${r.body}`);
    t.match(JSON.parse(r.body), { status: 400, title: 'Invalid input', param: 'query', detail: /leads outside \/var\/log/ }, q);
    t.notMatch(r.body, CANARY, `${q}: no byte of the file`);
  }
  for (const q of ['app/', 'app/fifo.log']) {
    const r = await get(q);
    t.equal(r.status, 400, `${q}: not a regular file`);
    t.match(r.body, /not a regular file/);
  }
  t.equal((await get('app/none.log')).status, 404);
});

t.test('--host-root /: a uniquely named link under the real /var/log to /etc and to a canary dir', async (t) => {
  const tag = `nodetruth-test-${randomBytes(6).toString('hex')}`;
  const made: string[] = [];
  try {
    symlinkSync('/etc', `/var/log/${tag}`);
    made.push(`/var/log/${tag}`);
    symlinkSync(outside, `/var/log/${tag}-out`);
    made.push(`/var/log/${tag}-out`);
    mkdirSync(`/var/log/${tag}-dir`);
    made.push(`/var/log/${tag}-dir`);
    writeFileSync(`/var/log/${tag}-dir/real.log`, 'real-line\n');
  } catch (err) {
    for (const p of made) rmSync(p, { recursive: true, force: true });
    t.comment(`skipped: cannot write under the real /var/log (${(err as NodeJS.ErrnoException).code}): needs root on a test machine`);
    return;
  }
  t.teardown(() => {
    for (const p of made) rmSync(p, { recursive: true, force: true });
  });
  const osRelease = readFileSync('/etc/os-release', 'utf8');
  const { ta, get } = await serve(['--host-root', '/']);
  t.teardown(() => ta.close());

  const ok = await get(`${tag}-dir/real.log`);
  t.equal(ok.status, 200, ok.body);
  t.same(JSON.parse(ok.body).lines, ['real-line']);
  for (const q of [`${tag}/os-release`, `${tag}/hostname`, `${tag}-out/secret`, `/var/log/${tag}-out/secret`]) {
    const r = await get(q);
    t.equal(r.status, 400, `${q}: ${r.body}`);
    t.match(r.body, /leads outside \/var\/log/);
    t.notMatch(r.body, CANARY, `${q}: no byte of the canary`);
    t.notOk(r.body.includes(osRelease.split('\n')[0]!), `${q}: no byte of /etc/os-release`);
  }
});

t.test('readLogFile maps the refusals of HostFs.openFile (source level, root = temp dir)', async (t) => {
  const root = mkdtempSync(path.join(base, 'src-'));
  mkdirSync(path.join(root, 'var/log'), { recursive: true });
  symlinkSync('loop-b', path.join(root, 'var/log/loop-a'));
  symlinkSync('loop-a', path.join(root, 'var/log/loop-b'));
  symlinkSync(outside, path.join(root, 'var/log/out'));
  const fs = new HostFs(root);
  await t.rejects(readLogFile(fs, 'loop-a', null, null), { code: 'path_link_loop', param: 'query', message: /cannot open .*ELOOP/ });
  await t.rejects(readLogFile(fs, 'out/secret', null, null), { code: 'path_outside_root', param: 'query', message: /leads outside/ });
  await t.rejects(readLogFile(fs, 'missing.log', null, null), { code: 'not_found', message: /does not exist/ });
});

t.test('a line longer than maxFileLineChars keeps its head, says what was cut, and leaves redacted', async (t) => {
  const root = mkdtempSync(path.join(base, 'long-'));
  mkdirSync(path.join(root, 'var/log'), { recursive: true });
  const max = JOURNAL_LIMITS.maxFileLineChars;
  // a 4 MiB line of URL userinfo shapes (a runaway app logging its connection strings), then an ordinary one
  const unit = 'db=postgres://app:FAKEPW@10.0.0.7/x ';
  const long = unit.repeat(Math.ceil((4 * 1024 * 1024) / unit.length));
  writeFileSync(path.join(root, 'var/log/app.log'), `${long}\nnext line\n`);
  const r = await readLogFile(new HostFs(root), 'app.log', null, null);
  t.equal(r.lines.length, 2);
  t.ok(r.lines[0]!.length < 2 * max, `the long line is cut near the bound (${r.lines[0]!.length} characters, markers included)`);
  t.match(r.lines[0], new RegExp(` \\[${long.length - max} characters cut\\]$`));
  t.notMatch(r.lines[0], /FAKEPW/, 'what is kept is redacted');
  t.equal(r.lines[1], 'next line');
  t.match(r.warnings, [/1 line\(s\) longer than 65536 characters/]);
});
