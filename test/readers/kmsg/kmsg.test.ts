import { closeSync, openSync, writeSync, mkdtempSync, writeFileSync, appendFileSync, rmSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { parseKmsgRecord, splitKmsgText, unescapeKmsg } from '../../../src/readers/kmsg/parse.js';
import { formatKmsgRecord } from '../../helpers/kmsg.js';
import { KmsgReader, readBootId } from '../../../src/readers/kmsg/reader.js';
import { KernelLog, compileKernelPattern } from '../../../src/view/kernel-log.js';
import { kmsgFixture } from '../../fixtures/kmsg/oom-reports.js';
import { rejectsStatus } from '../../helpers/problem.js';

t.test('record format', async (t) => {
  t.match(parseKmsgRecord('6,562,89750924,-;anon 33255424\\x0afile 4096'), { level: 6, facility: 0, seq: 562, tsUsec: 89750924, flags: '-', text: 'anon 33255424\nfile 4096' });
  t.match(parseKmsgRecord('14,3526,610231314,-;hello\n SUBSYSTEM=usb\n DEVICE=c189:1\n'), { level: 6, facility: 1, seq: 3526, text: 'hello', dict: { SUBSYSTEM: 'usb', DEVICE: 'c189:1' } });
  t.match(parseKmsgRecord('12,7,100,-,caller=T1;with caller id'), { level: 4, facility: 1, text: 'with caller id' });
  t.equal(parseKmsgRecord('not a record'), null);
  t.equal(unescapeKmsg('a\\x5cb \\xc3\\xbc'), 'a\\b ü');
  const recs = splitKmsgText('6,1,1,-;a\n SUBSYSTEM=x\n6,2,2,-;b\n');
  t.same(recs.map((r) => [r.seq, r.text, r.dict]), [[1, 'a', { SUBSYSTEM: 'x' }], [2, 'b', {}]]);
});

const realKmsg = (() => {
  try {
    closeSync(openSync('/dev/kmsg', 'r'));
    return true;
  } catch {
    return false;
  }
})();

t.test('the real /dev/kmsg of this machine', { skip: !realKmsg && 'no readable /dev/kmsg' }, async (t) => {
  const reader = new KmsgReader(new HostFs('/'), null);
  const before = await reader.readAll();
  const recs = before.flatMap((i) => (i.kind === 'record' ? [i.record] : []));
  t.ok(recs.length > 0, `${recs.length} records`);
  let increasing = true;
  for (let i = 1; i < recs.length; i++) if (recs[i]!.seq <= recs[i - 1]!.seq) increasing = false;
  t.ok(increasing, 'sequence numbers increase');
  t.ok(recs.every((r) => r.level >= 0 && r.level <= 7 && r.tsUsec >= 0));

  // a marker written as root comes back as a record (facility user, as printk_emit logs writes to kmsg)
  const marker = `nodetruth-test-marker-${process.pid}-${Date.now()}`;
  const fd = openSync('/dev/kmsg', 'w');
  writeSync(fd, `<13>${marker}\n`);
  closeSync(fd);
  const after = await reader.readAll();
  const mine = after.flatMap((i) => (i.kind === 'record' && i.record.text.includes(marker) ? [i.record] : []));
  t.equal(mine.length, 1);
  t.match(mine[0], { level: 5, facility: 1 });
  t.ok(mine[0]!.seq > recs.at(-1)!.seq);

  // through KernelLog: wall clock from the boot time, sinceSeq and pattern
  const log = new KernelLog(reader, new HostFs('/'), null);
  const r = await log.read({ sinceSeq: mine[0]!.seq, tailLines: null, pattern: await compileKernelPattern(marker) });
  t.equal(r.records.length, 1);
  const age = Date.now() - Date.parse(r.records[0]!.time);
  t.ok(age >= -1000 && age < 60_000, `wall clock of the marker is now (${age} ms ago)`);
});

t.test('follow on the real /dev/kmsg sees a new marker, and ends on abort', { skip: !realKmsg && 'no /dev/kmsg' }, async (t) => {
  const log = new KernelLog(new KmsgReader(new HostFs('/'), null), new HostFs('/'), null);
  const ac = new AbortController();
  const marker = `nodetruth-follow-${process.pid}-${Date.now()}`;
  const it = log.follow({ sinceSeq: null, tailLines: 0, pattern: await compileKernelPattern(marker) }, ac.signal, 20);
  // written until the follow sees it: a follow with tailLines=0 starts at the end of the ring as it
  // finds it, so one marker written before it got there (a loaded machine) would never be seen
  const writer = setInterval(() => {
    const fd = openSync('/dev/kmsg', 'w');
    writeSync(fd, `<14>${marker}\n`);
    closeSync(fd);
  }, 200);
  const first = await it.next().finally(() => clearInterval(writer));
  t.match(first.value, { kind: 'record', record: { text: marker, level: 6 } });
  ac.abort();
  t.equal((await it.next()).done, true);
});

t.test('a regular file is read one record per line, and followed as it grows', async (t) => {
  const log = new KernelLog(new KmsgReader(new HostFs('/'), kmsgFixture('oom-memcg-systemd.kmsg')), new HostFs('/'), null, () => 1795974060151173);
  const all = await log.read({ sinceSeq: null, tailLines: null, pattern: null });
  t.equal(all.records.length, 112);
  t.equal(all.oldestSeq, 514);
  t.match(all.records.at(-1), { seq: 625, levelName: 'err', time: '2026-11-29T17:42:31.182206Z' });
  t.equal((await log.read({ sinceSeq: 620, tailLines: 2, pattern: null })).records.map((r) => r.seq).join(), '624,625');
  t.equal((await log.read({ sinceSeq: null, tailLines: null, pattern: await compileKernelPattern('killed process') })).records.length, 2);

  const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-kmsg-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const f = path.join(dir, 'kmsg');
  writeFileSync(f, '6,1,10,-;one\n');
  const ac = new AbortController();
  const it = new KernelLog(new KmsgReader(new HostFs('/'), f), new HostFs('/'), null).follow({ sinceSeq: null, tailLines: 5, pattern: null }, ac.signal, 10);
  t.match((await it.next()).value, { record: { seq: 1, text: 'one' } });
  appendFileSync(f, '6,2,20,-;two\n');
  t.match((await it.next()).value, { record: { seq: 2, text: 'two' } });
  ac.abort();
  t.equal((await it.next()).done, true);
});

t.test('the ring lost history: older kernel records come from the journal', async (t) => {
  const { makeJournalHost } = await import('../../fixtures/journal/host.js');
  const { BOOTS, BOOT_WALL_US } = await import('../../fixtures/journal/gen.js');
  const { JournalSource } = await import('../../../src/readers/journal/journalctl.js');
  const host = await makeJournalHost();
  t.teardown(host.cleanup);
  mkdirSync(path.join(host.root, 'proc/sys/kernel/random'), { recursive: true });
  const b = BOOTS[2];
  writeFileSync(path.join(host.root, 'proc/sys/kernel/random/boot_id'), `${b.slice(0, 8)}-${b.slice(8, 12)}-${b.slice(12, 16)}-${b.slice(16, 20)}-${b.slice(20)}\n`);
  // the ring now starts at the second report: the first only survives in the journal
  const kmsg = path.join(host.root, 'kmsg');
  const { readFileSync } = await import('node:fs');
  writeFileSync(kmsg, readFileSync(kmsgFixture('oom-memcg-systemd.kmsg'), 'utf8').split('\n').filter((l) => Number(l.split(',')[1]) >= 569).join('\n'));
  const fs = new HostFs(host.root);
  const log = new KernelLog(new KmsgReader(fs, kmsg), fs, new JournalSource({ hostFs: fs }), () => BOOT_WALL_US[2]);
  const r = await log.read({ sinceSeq: null, tailLines: null, pattern: await compileKernelPattern('Killed process') });
  t.same(r.records.map((x) => [x.source, x.seq, x.monotonicUs]), [
    ['journal', null, 89755557],
    ['kmsg', 625, 91031033],
  ]);
  t.ok(r.records[0]!.cursor);
  t.equal(r.records[0]!.time, r.records[0]!.time.replace(/\.\d{6}Z$/, '') + '.' + String((BOOT_WALL_US[2] + 89755557) % 1e6).padStart(6, '0') + 'Z');
});

t.test('bad kernel patterns are 400', async (t) => {
  await rejectsStatus(t, () => compileKernelPattern('('), 400);
  await rejectsStatus(t, () => compileKernelPattern('x'.repeat(2000)), 400);
  t.equal((await compileKernelPattern('oom')).caseInsensitive, true);
  t.equal((await compileKernelPattern('OOM')).caseInsensitive, false);
});

t.test('the boot id as the journal writes it (32 hex digits, no dashes), or null', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-bootid-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const fs = new HostFs(root);
  t.equal(await readBootId(fs), null, 'no /proc/sys/kernel/random/boot_id');
  mkdirSync(path.join(root, 'proc/sys/kernel/random'), { recursive: true });
  const file = path.join(root, 'proc/sys/kernel/random/boot_id');
  writeFileSync(file, '5f1c0a2e-3b4d-4e6f-8a9b-0c1d2e3f4a5b\n');
  t.equal(await readBootId(fs), '5f1c0a2e3b4d4e6f8a9b0c1d2e3f4a5b');
  writeFileSync(file, '5f1c0a2e-3b4d-4e6f-8a9b-0c1d2e3f4a5b _BOOT_ID=x\n');
  t.equal(await readBootId(fs), null, 'anything else is no boot id (it goes into a journal match)');
  writeFileSync(file, '');
  t.equal(await readBootId(fs), null);
});

t.test('formatKmsgRecord gives back every captured line as the kernel wrote it (escapes, continuation lines)', async (t) => {
  const dir = path.dirname(kmsgFixture('oom-global.kmsg'));
  let records = 0;
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.kmsg'))) {
    const text = readFileSync(path.join(dir, f), 'utf8');
    const lines = text.split('\n').filter((l) => /^\d+,/.test(l) || l.startsWith(' '));
    const recs = splitKmsgText(text);
    records += recs.length;
    t.same(recs.map(formatKmsgRecord).join('\n').split('\n'), lines, f);
  }
  t.ok(records > 500, `${records} records`);
  const odd = parseKmsgRecord('4,7,8,-;a\\x5cb \\x1b[2J \\xe6\\x97\\xa5\n SUBSYSTEM=net\n DEVICE=n\\x0a2')!;
  t.equal(odd.text, 'a\\b \x1b[2J 日');
  t.equal(formatKmsgRecord(odd), '4,7,8,-;a\\x5cb \\x1b[2J \\xe6\\x97\\xa5\n SUBSYSTEM=net\n DEVICE=n\\x0a2');
  t.equal(parseKmsgRecord('6,1,0,-;plain')!.dict, parseKmsgRecord('6,2,0,-;other')!.dict, 'records without continuation lines share the one empty dictionary');
});
