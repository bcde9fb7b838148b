import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { rejectsStatus } from '../../helpers/problem.js';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { JournalSource, type JournalQueryJ } from '../../../src/readers/journal/journalctl.js';
import { resolveJournalctl } from '../../../src/readers/journal/resolve.js';
import { validateJournalQuery, type JournalQueryInput } from '../../../src/readers/journal/query.js';
import { BOOTS } from '../../fixtures/journal/gen.js';
import { makeJournalHost } from '../../fixtures/journal/host.js';

const host = await makeJournalHost();
t.teardown(host.cleanup);
const src = new JournalSource({ hostFs: new HostFs(host.root), journalctl: 'auto' });

const jq = (i: JournalQueryInput) => validateJournalQuery(i) as JournalQueryJ;
/** what journalctl itself prints for the same selection, as JSON lines */
const direct = (...args: string[]) =>
  execFileSync('journalctl', [`--root=${host.root}`, '--no-pager', '-o', 'json', ...args], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, string>);

t.test('bundled journalctl with --root (no journalctl inside the fake host)', async (t) => {
  const cmd = await resolveJournalctl(new HostFs(host.root), 'auto');
  t.equal(cmd.mode, 'bundled');
  t.same(cmd.args, [`--root=${host.root}`]);
  t.match(await resolveJournalctl(new HostFs('/'), 'auto'), { mode: 'host', args: ['--root=/'] });
  t.match(await resolveJournalctl(new HostFs(host.root), '/opt/jctl'), { mode: 'configured', file: '/opt/jctl' });
});

t.test('reads both /var/log/journal and /run/log/journal, same as journalctl', async (t) => {
  const r = await src.query(jq({}));
  const d = direct();
  t.equal(r.records.length, d.length);
  t.same(r.records.map((x) => x.cursor), d.map((x) => x.__CURSOR));
  t.same(new Set(r.records.map((x) => x.bootId)), new Set(BOOTS));
  t.equal(r.truncated, null);
  t.same(r.warnings, []);
});

t.test('kubelet tail matches journalctl -u kubelet -n 5', async (t) => {
  const r = await src.query(jq({ query: ['kubelet'], tailLines: 5 }));
  const d = direct('-u', 'kubelet', '-n', '5');
  t.equal(r.records.length, 5);
  t.same(r.records.map((x) => x.message), d.map((x) => x.MESSAGE));
  const last = r.records.at(-1)!;
  t.equal(last.message, 'I1129 17:42:32.251173    702 log.go:1] multi-line\nsecond line ü 日本語 ✓'.replace(/17:42:32\.251173/, last.message.slice(6, 21)));
  t.equal(last.klogSeverity, 'I');
  t.equal(last.unit, 'kubelet.service');
  t.equal(last.identifier, 'kubelet');
  t.equal(last.priority, 6);
  t.equal(last.bootId, BOOTS[2]);
  t.match(last.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  t.equal(last.time, new Date(Number(d.at(-1)!.__REALTIME_TIMESTAMP) / 1000).toISOString().slice(0, 23) + d.at(-1)!.__REALTIME_TIMESTAMP!.slice(-3) + 'Z');
  t.equal(r.records.find((x) => x.message.includes('Error syncing pod'))?.klogSeverity, 'E');
  // systemd's own "Started kubelet.service" is about the unit (UNIT=), as journalctl -u shows it
  const all = await src.query(jq({ query: ['kubelet'] }));
  t.ok(all.records.some((x) => x.unit === 'init.scope' && x.aboutUnit === 'kubelet.service'));
});

t.test('several units, boot, since/until, priority, pattern', async (t) => {
  const two = await src.query(jq({ query: ['kubelet', 'containerd'], boot: -1 }));
  t.same(two.records.map((x) => x.cursor), direct('-u', 'kubelet', '-u', 'containerd', '-b', '-1').map((x) => x.__CURSOR));
  t.ok(two.records.every((x) => x.bootId === BOOTS[1]));
  const b0 = await src.query(jq({ boot: 0, tailLines: 1 }));
  t.equal(b0.records[0]?.bootId, BOOTS[2]);

  const mid = two.records[10]!;
  const s = await src.query(jq({ query: ['kubelet', 'containerd'], sinceTime: mid.time, untilTime: two.records[12]!.time }));
  t.same(s.records.map((x) => x.cursor), two.records.slice(10, 13).map((x) => x.cursor));

  const errs = await src.query(jq({ query: ['containerd'], priority: 'err' }));
  t.same(errs.records, []);
  const kern = await src.query(jq({ priority: '3' }));
  t.ok(kern.records.length >= 2 && kern.records.every((x) => x.priority! <= 3));

  const g = await src.query(jq({ query: ['containerd'], pattern: 'shim disconnected' }));
  t.same(g.records.map((x) => x.cursor), direct('-u', 'containerd', '--grep', 'shim disconnected').map((x) => x.__CURSOR));
  t.equal(g.records.length, 3);
  // journalctl 252 prints -n N --grep newest first; we return oldest first like every other answer
  const tailGrep = await src.query(jq({ pattern: 'oom-killer|Killed process', tailLines: 3 }));
  const d3 = direct('--grep', 'oom-killer|Killed process', '-n', '3').map((x) => x.__CURSOR);
  t.same(tailGrep.records.map((x) => x.cursor), d3.slice().reverse());
  t.ok(tailGrep.records[0]!.time < tailGrep.records[2]!.time);
  const none = await src.query(jq({ query: ['containerd'], pattern: 'no such text anywhere' }));
  t.same(none.records, [], 'journalctl exits 1 when --grep matches nothing: not an error');
  const unknown = await src.query(jq({ query: ['nosuch'] }));
  t.same(unknown.records, []);
});

t.test('journalctl complaints map to 4xx', async (t) => {
  for (const [q, status] of [
    [jq({ pattern: '(' }), 400],
    [jq({ pattern: '[z-a]' }), 400],
    [jq({ boot: -7 }), 404],
  ] as const) {
    await rejectsStatus(t, src.query(q), status, undefined, JSON.stringify(q));
  }
  await rejectsStatus(t, src.checkPattern('a(b'), 400, /Bad pattern/);
  await src.checkPattern('(?i)oom|kill(ed)?');
});

t.test('stderr warnings are returned', async (t) => {
  const bogus = path.join(host.root, 'var/log/journal', '517832f035cc43bf8c9000a3fb39ea0a', 'system@broken.journal');
  writeFileSync(bogus, 'not a journal file');
  t.teardown(() => execFileSync('rm', ['-f', bogus]));
  const r = await src.query(jq({ query: ['kubelet'], tailLines: 1 }));
  t.equal(r.records.length, 1);
  t.match(r.warnings.join('\n'), /broken\.journal/);
});

t.test('byte bound and deadline truncate, and leave no child', async (t) => {
  const small = new JournalSource({ hostFs: new HostFs(host.root), maxBytes: 2000 });
  const r = await small.query(jq({}));
  t.equal(r.truncated, 'bytes');
  t.ok(r.records.length > 0 && r.records.length < 10);
  t.equal(small.live.size, 0);
  const ac = new AbortController();
  const p = src.query(jq({}), ac.signal);
  ac.abort();
  await p;
  t.equal(src.live.size, 0);
});

t.test('spawn failure is a 503', async (t) => {
  const broken = new JournalSource({ hostFs: new HostFs(host.root), journalctl: '/nonexistent/journalctl' });
  await rejectsStatus(t, broken.query(jq({})), 503);
});

t.test('scan: each record handed over as parsed; reverse reads the newest of a window, where --since with --lines counts from the oldest', async (t) => {
  const all = (await src.query(jq({ query: ['kubelet'] }))).records;
  t.ok(all.length > 10, `${all.length} kubelet records`);
  const sinceUs = Date.parse(all[0]!.time) * 1000; // every one of them in the window
  const forward = { ...jq({ query: ['kubelet'], tailLines: 5 }), sinceUs };
  const seen: string[] = [];
  const r = await src.scan({ ...forward, reverse: true }, undefined, (rec) => void seen.push(rec.cursor));
  t.same(seen, all.slice(-5).map((x) => x.cursor).reverse(), 'the newest five, newest first');
  t.match(r, { count: 5, truncated: null, warnings: [] });
  t.ok(r.command.includes('--reverse'));
  const q = await src.query({ ...forward, reverse: true });
  t.same(q.records.map((x) => x.cursor), all.slice(-5).map((x) => x.cursor), 'query: the same, oldest first');
  await t.rejects(src.scan({ ...forward, reverse: true, follow: true }, undefined, () => {}));
});
