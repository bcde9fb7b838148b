import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { HostFs } from '../../src/readers/hostfs/hostfs.js';
import { JournalSource } from '../../src/readers/journal/journalctl.js';
import { KmsgReader } from '../../src/readers/kmsg/reader.js';
import { OomSource } from '../../src/view/oom.js';
import { BOOTS, BOOT_WALL_US } from '../fixtures/journal/gen.js';
import { makeJournalHost } from '../fixtures/journal/host.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { realNodeSpec, writeHostRoot, POD_UID, OOM_CHILD_ID, OOM_MAIN_ID } from '../fixtures/node-tree.js';

const host = await makeJournalHost();
t.teardown(host.cleanup);
writeHostRoot(host.root, realNodeSpec('systemd'));
mkdirSync(path.join(host.root, 'proc/sys/kernel/random'), { recursive: true });
const b = BOOTS[2];
writeFileSync(path.join(host.root, 'proc/sys/kernel/random/boot_id'), `${b.slice(0, 8)}-${b.slice(8, 12)}-${b.slice(12, 16)}-${b.slice(16, 20)}-${b.slice(20)}\n`);
const fs = new HostFs(host.root);

t.test('kmsg and journal agree: each kill once, with seq and cursor, attributed to pod and container', async (t) => {
  const src = new OomSource(new KmsgReader(fs, kmsgFixture('oom-memcg-systemd.kmsg')), new JournalSource({ hostFs: fs }), fs, () => BOOT_WALL_US[2]);
  const r = await src.kills();
  t.same(r.warnings, []);
  t.same(r.sources, { kmsg: true, journal: true });
  t.equal(r.kills.length, 2);
  t.match(r.kills[0], { pid: 916, podUid: POD_UID, qos: 'burstable', containerId: OOM_CHILD_ID, cgroupDriver: 'systemd', evidence: { source: 'kmsg', firstSeq: 514, lastSeq: 568, cursor: /^s=/ } });
  t.match(r.kills[1], { pid: 938, containerId: OOM_MAIN_ID, evidence: { lastSeq: 625, cursor: /^s=/ } });
  t.equal(r.kills[0]!.time, '2026-11-29T17:42:29.906730Z');
});

t.test('only the journal (ring overwritten, or another boot)', async (t) => {
  const empty = path.join(host.root, 'empty.kmsg');
  writeFileSync(empty, '');
  const src = new OomSource(new KmsgReader(fs, empty), new JournalSource({ hostFs: fs }), fs);
  const r = await src.kills();
  t.equal(r.kills.length, 2);
  t.ok(r.kills.every((k) => k.evidence.source === 'journal' && k.evidence.firstSeq === null && k.bootId === BOOTS[2] && k.podUid === POD_UID));
});

t.test('journal unavailable: kmsg alone, with a warning; global and cgroupfs reports', async (t) => {
  const src = new OomSource(new KmsgReader(fs, kmsgFixture('oom-global.kmsg')), new JournalSource({ hostFs: fs, journalctl: '/nonexistent' }), fs);
  const r = await src.kills();
  t.match(r.kills, [{ global: true, process: 'stress', qos: 'besteffort' }]);
  t.match(r.warnings.join(), /journal: cannot run/);
  const c = await new OomSource(new KmsgReader(fs, kmsgFixture('oom-memcg-cgroupfs.kmsg')), null, fs).kills();
  t.match(c.kills, [{ process: 'java', cgroupDriver: 'cgroupfs', qos: 'guaranteed' }]);
});

t.test('memory.events of live pods and containers', async (t) => {
  const src = new OomSource(new KmsgReader(fs, kmsgFixture('oom-global.kmsg')), null, fs);
  const ev = await src.memoryEvents();
  const pod = ev.find((e) => e.podUid === POD_UID && e.containerId === null);
  t.match(pod?.events, { oom: 2, oomKill: 2 });
  t.match(ev.find((e) => e.containerId === OOM_CHILD_ID)?.events, { oom: 1, oomKill: 1 });
  t.notOk(ev.find((e) => e.containerId === OOM_MAIN_ID), 'the OOM-killed main container lost its scope');
});

t.test('an OOM report written to /dev/kmsg from userspace (facility 1, forced by the kernel) is not a kill', async (t) => {
  // the real report, as a tenant with /dev/kmsg write access would replay it to blame another pod
  const forged = path.join(host.root, 'forged.kmsg');
  const real = (await import('node:fs')).readFileSync(kmsgFixture('oom-memcg-systemd.kmsg'), 'utf8');
  writeFileSync(forged, real.replace(/^(\d+),/gm, (_, pri: string) => `${(Number(pri) & 7) | 8},`));
  const r = await new OomSource(new KmsgReader(fs, forged), null, fs).kills();
  t.same(r.kills, []);
  t.equal((await new OomSource(new KmsgReader(fs, kmsgFixture('oom-memcg-systemd.kmsg')), null, fs).kills()).kills.length, 2, 'the kernel-written original still counts');
});
