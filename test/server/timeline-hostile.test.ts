/**
 * Hostile records in their real shapes through GET /v1/timeline: a kubelet journal record
 * whose MESSAGE is binary (NUL, escape sequences, bytes that are not UTF-8: journald stores it
 * in the export format's binary form), one of 1 MiB, and kernel lines that are not /dev/kmsg
 * records (no header, a time that is not digits, a level out of range) among valid ones. The
 * valid records stand, the long one is cut and counted, nothing reaches a terminal unescaped.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { Timeline } from '../../src/model/timeline.js';
import { formatMicros } from '../../src/readers/journal/time.js';
import { exportEntry, JOURNAL_REMOTE, MACHINE_ID, writeJournal } from '../fixtures/journal/gen.js';
import { testApp } from '../helpers/app.js';

const NOW_MS = Date.now();
const BTIME = Math.floor(NOW_MS / 1000) - 700;
const BOOT_ID = '13aee3a87a774e2d9686f3c19d408b06';
const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-timeline-hostile-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(path.join(root, 'proc/sys/kernel/random'), { recursive: true });
writeFileSync(path.join(root, 'proc/stat'), `cpu 1\nbtime ${BTIME}\n`);
writeFileSync(path.join(root, 'proc/sys/kernel/random/boot_id'), '13aee3a8-7a77-4e2d-9686-f3c19d408b06\n');
const kmsg = path.join(root, 'kmsg.txt');
writeFileSync(
  kmsg,
  [
    '3,10,100000000,-;INFO: task kworker/u8:1:77 blocked for more than 120 seconds.',
    'INFO: task nohdr:78 blocked for more than 120 seconds.',
    '3,11,12abc,-;INFO: task badts:79 blocked for more than 120 seconds.',
    `3,12,200000000,-;${'K'.repeat(1024 * 1024)}`,
    '3,13,300000000,-;INFO: task jbd2/sda1-8:312 blocked for more than 120 seconds.',
  ].join('\n') + '\n',
);

const haveJournal = existsSync(JOURNAL_REMOTE);
const us = (s: number) => (NOW_MS - s * 1000) * 1000;
if (haveJournal) {
  const rec = (s: number, message: string | Buffer) =>
    exportEntry([
      ['__REALTIME_TIMESTAMP', String(us(s))],
      ['__MONOTONIC_TIMESTAMP', String(us(s) - BTIME * 1_000_000)],
      ['_BOOT_ID', BOOT_ID],
      ['_MACHINE_ID', MACHINE_ID],
      ['_HOSTNAME', 'node1'],
      ['_TRANSPORT', 'stdout'],
      ['_SYSTEMD_UNIT', 'kubelet.service'],
      ['SYSLOG_IDENTIFIER', 'kubelet'],
      ['PRIORITY', '6'],
      ['MESSAGE', message],
    ]);
  const binary = Buffer.concat([Buffer.from('E1202 10:00:00.000000     702 kubelet.go:1] "evil\0'), Buffer.from([0x1b, 0x5d, 0x30, 0x3b, 0x07, 0xff, 0xfe, 0x0d]), Buffer.from('" err="x"')]);
  await writeJournal(path.join(root, 'var/log/journal'), 'system', [
    rec(300, binary),
    rec(200, `E1202 10:00:00.000000     702 kubelet.go:1] "huge" ${'H'.repeat(1024 * 1024)}`),
    rec(100, 'E1202 10:00:00.000000     702 kubelet.go:1] "after the hostile ones"'),
  ]);
}

const { app, close } = await testApp(['--host-root', root, '--kmsg-path', kmsg]);
t.teardown(close);
const get = async (qs: string) => (await app.inject({ method: 'GET', url: `/v1/timeline${qs}`, headers: { host: '127.0.0.1' } })).body;

t.test('kernel lines that are not records: the valid ones stand', async (t) => {
  const b = JSON.parse(await get('?source=kernel')) as Timeline;
  t.same(
    b.events.map((e) => e.time),
    [formatMicros(BTIME * 1e6 + 100_000_000), formatMicros(BTIME * 1e6 + 300_000_000)],
    'the two hung tasks with a header; not the line without one nor the one whose time is not digits',
  );
  t.notOk(JSON.stringify(b).includes('nohdr') || JSON.stringify(b).includes('badts'));
});

t.test('a binary and a huge journal record: bounded, counted, escaped', { skip: haveJournal ? false : `no ${JOURNAL_REMOTE}` }, async (t) => {
  const b = JSON.parse(await get('?source=journal')) as Timeline;
  t.equal(b.events.length, 3, b.warnings.join('\n'));
  t.match(b.events[2]!.summary, /after the hostile ones/);
  t.ok(b.events.every((e) => e.summary.length <= 401 && e.evidence[0]!.excerpt.length <= 2001), 'bounded');
  t.ok(b.warnings.includes('journal: 1 records longer than 65536 characters were cut'), b.warnings.join('\n'));
  const text = await get('?source=journal&format=text&verbose=1');
  t.notOk(/[\x00-\x09\x0b-\x1f\x7f]/.test(text), 'no control character reaches the terminal');
  t.match(text, /evil\\x00\\x1b\]0;\\x07/);
});
