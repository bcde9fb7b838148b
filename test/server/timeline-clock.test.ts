/**
 * The timeline's clock against the journal's own pairing: real journal files
 * (systemd-journal-remote) holding kernel-transport records of the host's current boot, whose
 * __REALTIME_TIMESTAMP minus _SOURCE_MONOTONIC_TIMESTAMP is the journal's boot time. Where it
 * agrees with btime the answer names it; where the kernel's clock stood still for an hour (a
 * suspend) the answer warns; another boot's records, or none, change nothing.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { Timeline } from '../../src/model/timeline.js';
import { formatMicros } from '../../src/readers/journal/time.js';
import { BOOTS, exportEntry, JOURNAL_REMOTE, MACHINE_ID, writeJournal } from '../fixtures/journal/gen.js';
import { testApp } from '../helpers/app.js';

if (!existsSync(JOURNAL_REMOTE)) {
  t.test('the journal\'s clock', { skip: `no ${JOURNAL_REMOTE} to write journal files with (apt install systemd-journal-remote)` }, async () => {});
} else {
  const NOW_S = Math.floor(Date.now() / 1000);
  const BTIME = NOW_S - 7200;
  const BOOT = BOOTS[2];
  const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-timeline-clock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  /** A host root whose journal holds kernel records stamped `mono` µs after boot, stored at `wall(mono)`. */
  async function host(name: string, boot: string, wall: (mono: number) => number): Promise<string> {
    const root = path.join(dir, name);
    mkdirSync(path.join(root, 'proc/sys/kernel/random'), { recursive: true });
    writeFileSync(path.join(root, 'proc/stat'), `cpu 1\nbtime ${BTIME}\n`);
    writeFileSync(path.join(root, 'proc/sys/kernel/random/boot_id'), `${BOOTS[2].replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-')}\n`);
    writeFileSync(path.join(root, 'kmsg.txt'), '6,1,1000,-;Linux version 6.1.0-57-amd64\n');
    const kernel = (mono: number, text: string) =>
      exportEntry([
        ['__REALTIME_TIMESTAMP', String(wall(mono))],
        ['__MONOTONIC_TIMESTAMP', String(mono + 4_000)],
        ['_BOOT_ID', boot],
        ['_MACHINE_ID', MACHINE_ID],
        ['_HOSTNAME', 'node1'],
        ['_TRANSPORT', 'kernel'],
        ['SYSLOG_IDENTIFIER', 'kernel'],
        ['PRIORITY', '6'],
        ['_SOURCE_MONOTONIC_TIMESTAMP', String(mono)],
        ['MESSAGE', text],
      ]);
    // the boot's first records reach the journal seconds late (journald starts after the kernel); later ones at once
    await writeJournal(path.join(root, 'var/log/journal'), 'system', [
      kernel(1_200_000, 'Linux version 6.1.0-57-amd64'),
      kernel(2_500_000, 'EXT4-fs (sda1): mounted filesystem'),
      kernel(4_000_000_000, 'IPv6: ADDRCONF(NETDEV_CHANGE): veth1: link becomes ready'),
      kernel(5_000_000_000, 'eth0: renamed from veth1'),
    ]);
    return root;
  }
  const ask = async (root: string, qs = '?source=kernel') => {
    const a = await testApp(['--host-root', root, '--kmsg-path', path.join(root, 'kmsg.txt')]);
    try {
      return (await a.app.inject({ method: 'GET', url: `/v1/timeline${qs}`, headers: { host: '127.0.0.1' } })).json() as Timeline;
    } finally {
      await a.close();
    }
  };
  // journald stores each record 3 ms after the kernel wrote it, and the boot's first ones 3 s late
  const late = (mono: number) => (mono < 3_000_000 ? (BTIME + 3) * 1_000_000 + 500_000 : BTIME * 1_000_000 + 400_000 + mono + 3_000);

  t.test('the journal agrees with btime: named in clock, no warning', async (t) => {
    const b = await ask(await host('agree', BOOT, late));
    t.equal(b.clock.kernel, 'btime', JSON.stringify(b.clock));
    t.same(b.clock.journal, { bootTime: formatMicros(BTIME * 1_000_000 + 403_000), differenceMs: 403, records: 4 }, 'the smallest difference: the records journald stored at once');
    t.notOk(b.warnings.some((w) => w.startsWith('clock:')), b.warnings.join('\n'));
  });

  t.test('an hour of suspend since boot: a warning saying how far kernel times may be off', async (t) => {
    // the wall clock ran on while the kernel's stood still: every record since the suspend is an hour later than btime says
    const b = await ask(await host('suspended', BOOT, (mono) => BTIME * 1_000_000 + 3600_000_000 + mono + 3_000));
    t.match(b.clock.journal, { differenceMs: 3600_003, records: 4 });
    t.ok(b.warnings.some((w) => /^clock: the journal's kernel records of this boot put it at .*, 3600\.0 s from the boot time used .*a suspend.*kernel times may be off/.test(w)), b.warnings.join('\n'));
    const runtimeOnly = await ask(path.join(dir, 'suspended'), '?source=runtime');
    t.equal(runtimeOnly.clock.journal, undefined, 'no kernel records asked: no pairing read');
  });

  t.test('only another boot\'s records: no pairing, no warning', async (t) => {
    const b = await ask(await host('other-boot', BOOTS[1], (mono) => BTIME * 1_000_000 + 3600_000_000 + mono));
    t.equal(b.clock.journal, undefined);
    t.notOk(b.warnings.some((w) => w.startsWith('clock:')));
  });
}
