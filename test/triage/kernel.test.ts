/**
 * Kernel log problems: the table (rules/kernel-problems.ts) on the kmsg fixture
 * built from Linux 6.1's format strings (test/fixtures/kmsg/kernel-problems.kmsg),
 * attribution through /proc/<pid>/cgroup of the captured node's tree, the kernel
 * triage rule against the catalogue, and /v1/triage through the real HTTP server.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { Finding } from '../../src/model/triage.js';
import { HostFs } from '../../src/readers/hostfs/hostfs.js';
import { KernelProblemsSource, kubepodsCgroupOf, matchKernelProblem, scanKernelProblems } from '../../src/view/kernel-problems.js';
import { splitKmsgText, type KmsgRecord } from '../../src/readers/kmsg/parse.js';
import { parseCpuLine } from '../../src/readers/kmsg/named.js';
import { KERNEL_PROBLEM_LIMITS, KERNEL_PROBLEMS } from '../../src/rules/kernel-problems.js';
import { KmsgReader } from '../../src/readers/kmsg/reader.js';
import { FINDINGS } from '../../src/triage/findings.js';
import { buildReport } from '../../src/triage/report.js';
import { kernelRule } from '../../src/triage/rules/kernel.js';
import { SnapshotIndex } from '../../src/triage/rules/index.js';
import { THRESHOLDS } from '../../src/rules/thresholds.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { OOM_CHILD_ID, POD_UID, realNode, SPIN_ID } from '../fixtures/node-tree.js';
import { failed, healthySnapshot, NOW, ok } from '../fixtures/triage-snapshot.js';
import { testApp } from '../helpers/app.js';

const FIXTURE = readFileSync(kmsgFixture('kernel-problems.kmsg'), 'utf8');
const RECORDS = splitKmsgText(FIXTURE);
const rec = (text: string, seq = 1, pri = 3, ts = 1_000_000): KmsgRecord => ({ seq, level: pri & 7, facility: pri >> 3, tsUsec: ts, flags: '-', text, dict: {} });

t.test('the table finds each row in the fixture, with what the kernel names', async (t) => {
  const s = await scanKernelProblems(RECORDS);
  const by = (id: string) => s.problems.filter((p) => p.id === id);
  t.match(by('kernel-hung-task'), [{ seq: 1201, pid: 987, comm: 'sh', seconds: 5 }], 'the forged LOG_USER record (1204) does not count');
  t.match(by('kernel-soft-lockup'), [{ seq: 1218, pid: 903, comm: 'sleep', seconds: 23, taint: 'L', context: [{ seq: 1220 }] }]);
  t.same(by('kernel-rcu-stall').map((p) => p.seq), [1223, 1226]);
  t.match(by('kernel-oops'), [{ seq: 1227, pid: 987, comm: 'sh', taint: 'WO', context: [{ seq: 1232, text: /^Oops: 0000/ }, { seq: 1233 }] }], 'one report: the BUG line, its Oops: line and the CPU line');
  t.notOk(s.problems.some((p) => p.seq === 1230), "a user process's general protection fault (traps:) is not a kernel oops");
  t.same(by('kernel-fs-error').map((p) => [p.seq, p.device]), [[1236, 'vdb'], [1237, 'vdb'], [1241, 'vdc']], 'jbd2 "vdb-8" is device vdb');
  t.same(by('kernel-fs-read-only').map((p) => [p.seq, p.device]), [[1238, 'vdb'], [1242, 'vdc']]);
  t.same(by('kernel-io-error').map((p) => [p.seq, p.device]), [[1239, 'vdb'], [1240, 'vdb']]);
  t.same(by('kernel-conntrack-full').map((p) => [p.seq, p.netns]), [[1244, null], [1245, null], [1247, null], [1248, 4026532512]], 'both spellings; not "net_ratelimit: callbacks suppressed"');
  t.same(Object.keys(s.counts).sort(), KERNEL_PROBLEMS.map((k) => k.id).sort(), 'every row has a record');
  t.equal(s.scanned, RECORDS.filter((r) => r.facility === 0).length - 1, 'the Oops: line of a report already taken is not scanned again');
});

t.test('hostile shapes: comm with colons and brackets, long records, other facilities', async (t) => {
  const s = await scanKernelProblems([
    rec('INFO: task a:b c:4242 blocked for more than 120 seconds.', 1),
    rec('watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [x] [y:z:77]', 2, 0),
    rec(`${'x'.repeat(KERNEL_PROBLEM_LIMITS.matchChars)}nf_conntrack: table full, dropping packet`, 3, 4),
    rec('INFO: task sh:1 blocked for more than 5 seconds.', 4, (1 << 3) | 3),
    rec('INFO: task nopid blocked for more than 5 seconds.', 5),
  ]);
  t.match(s.problems, [
    { seq: 1, pid: 4242, comm: 'a:b c' },
    { seq: 2, pid: 77, comm: 'x] [y:z' },
    { seq: 5, pid: null, comm: null },
  ]);
  t.equal(s.problems.length, 3, 'a phrase past matchChars is not searched; a LOG_USER record is not the kernel');
  t.equal(matchKernelProblem('EXT4-fs (vda): mounted filesystem r/w without journal. Quota mode: none.'), null, 'a mount message is no error');
  t.equal(matchKernelProblem('traps: app[12] general protection fault ip:1 sp:2 error:0'), null);
  t.same(parseCpuLine('CPU: 1 UID: 0 PID: 55 Comm: my app Not tainted 6.12.0 #1'), { pid: 55, comm: 'my app', taint: '' }, '6.10+ prints UID');
  t.same(parseCpuLine('CPU: 0 PID: 916 Comm: dd Not tainted 6.1.0-57-amd64 #1  Debian 6.1.192-3'), { pid: 916, comm: 'dd', taint: '' }, 'the captured OOM report line');
  const many = Array.from({ length: KERNEL_PROBLEM_LIMITS.keepPerKind * 3 }, (_, i) => rec('nf_conntrack: nf_conntrack: table full, dropping packet', i, 4));
  const flood = await scanKernelProblems(many);
  t.equal(flood.counts['kernel-conntrack-full'], many.length, 'a flood is counted');
  t.equal(flood.problems.length, KERNEL_PROBLEM_LIMITS.keepPerKind, 'and only the newest are kept');
  t.equal(flood.problems[0]!.seq, many.length - KERNEL_PROBLEM_LIMITS.keepPerKind);
});

t.test('/proc/<pid>/cgroup: the kubepods line, v2 or v1', async (t) => {
  t.equal(kubepodsCgroupOf('0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7f3c2a10_1111_4222_8333_944455556666.slice/cri-containerd-' + SPIN_ID + '.scope\n'), `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7f3c2a10_1111_4222_8333_944455556666.slice/cri-containerd-${SPIN_ID}.scope`);
  t.equal(kubepodsCgroupOf('12:pids:/kubepods/burstable/pod' + POD_UID + '/' + SPIN_ID + '\n0::/\n'), `/kubepods/burstable/pod${POD_UID}/${SPIN_ID}`);
  t.equal(kubepodsCgroupOf('0::/system.slice/containerd.service\n'), '/system.slice/containerd.service');
});

// the captured node's tree: pid 903 (sleep, started at 29.9 s) in the oom-child container, 987 (sh, 31 s) in spin
const node = realNode('systemd');
t.teardown(() => node.cleanup());
const BOOT_US = (NOW - 1800 * 1000) * 1000 - 1_705_900_100; // the fixture's last record 30 minutes before NOW

t.test('attribution: a named pid still running → its pod and container; exited or reused → said why', async (t) => {
  const src = new KernelProblemsSource(new KmsgReader(new HostFs(node.root), kmsgFixture('kernel-problems.kmsg')), new HostFs(node.root), () => BOOT_US);
  const r = await src.read();
  const hung = r.problems.find((p) => p.id === 'kernel-hung-task')!;
  t.match(hung, { pid: 987, podUid: POD_UID, containerId: SPIN_ID, qos: 'burstable', attribution: null, cgroup: /cri-containerd-af5921/ });
  t.match(r.problems.find((p) => p.id === 'kernel-soft-lockup'), { pid: 903, podUid: POD_UID, containerId: OOM_CHILD_ID });
  t.same(r.warnings, []);
  // pid 987 reused by a process started after the record; 903 gone
  const reused = realNode('systemd');
  t.teardown(() => reused.cleanup());
  const stat = path.join(reused.root, 'proc/987/stat');
  writeFileSync(stat, readFileSync(stat, 'utf8').replace(/^(987 \(sh\) (?:\S+ ){19})3100 /, '$1999999 '));
  writeFileSync(path.join(reused.root, 'proc/903/stat'), '');
  const r2 = await new KernelProblemsSource(new KmsgReader(new HostFs(reused.root), kmsgFixture('kernel-problems.kmsg')), new HostFs(reused.root), () => BOOT_US).read();
  t.match(r2.problems.find((p) => p.id === 'kernel-hung-task'), { podUid: null, attribution: /pid 987 was reused: the running process started after the record/ });
  t.match(r2.problems.find((p) => p.id === 'kernel-soft-lockup'), { podUid: null, attribution: /pid 903 has exited/ });
});

// the rule over a snapshot; its findings checked against the catalogue as rules.test.ts does for the others
const CATALOGUE = new Map(FINDINGS.map((k) => [k.id, k]));
const emitted = new Set<string>();
const offCatalogue: string[] = [];
function judge(fs: Finding[]): Finding[] {
  for (const f of fs) {
    const k = CATALOGUE.get(f.id);
    if (!k || k.rule !== 'kernel' || !k.severities.includes(f.severity)) offCatalogue.push(`${f.id} ${f.severity}`);
    emitted.add(`${f.id} ${f.severity}`);
  }
  return fs;
}

t.test('the kernel rule: one finding per kind and subject, kmsg seq and text as evidence, pods named', async (t) => {
  const problems = await new KernelProblemsSource(new KmsgReader(new HostFs(node.root), kmsgFixture('kernel-problems.kmsg')), new HostFs(node.root), () => BOOT_US).read();
  const s = healthySnapshot();
  s.kernel = ok(problems);
  const f = judge(kernelRule.run(s, new SnapshotIndex(s)));
  const by = (id: string) => f.filter((x) => x.id === id);
  t.match(by('kernel-hung-task'), [
    {
      severity: 'warning',
      subject: { podUid: POD_UID, containerId: SPIN_ID },
      detail: /^1 kernel record in the last 60 minutes .*tasks sh \(pid 987\); up to 5 s/,
      evidence: [{ source: 'kmsg', seq: 1201, excerpt: /INFO: task sh:987 blocked for more than 5 seconds\.\n {2}\/proc\/987\/cgroup: \/kubepods\.slice\// }],
    },
  ]);
  t.match(by('kernel-soft-lockup'), [{ severity: 'critical', subject: { containerId: OOM_CHILD_ID }, detail: /kernel tainted: L \(a soft lockup occurred\)/ }]);
  t.match(by('kernel-oops'), [{ severity: 'critical', evidence: [{ seq: 1227, excerpt: /\[seq 1232\] Oops: 0000 \[#1\]/ }], detail: /W \(the kernel issued a warning \(WARN_ON\)\), O \(an externally built \(out-of-tree\) module was loaded\)/ }]);
  t.same(by('kernel-fs-read-only').map((x) => x.title), ['A filesystem was remounted read-only or shut down after errors on vdb', 'A filesystem was remounted read-only or shut down after errors on vdc']);
  t.same(by('kernel-io-error').map((x) => x.evidence.map((e) => e.seq)), [[1239, 1240]]);
  t.same(by('kernel-conntrack-full').map((x) => [x.title, x.evidence.length]), [
    ['The conntrack table is full: new connections are dropped', 3],
    ['The conntrack table is full: new connections are dropped in netns 4026532512', 1],
  ]);
  t.equal(by('kernel-rcu-stall').length, 1);

  // two hours later: only what lasts is still reported
  const later = { ...s, nowMs: NOW + 2 * 3600_000 };
  t.same([...new Set(kernelRule.run(later, new SnapshotIndex(later)).map((x) => x.id))].sort(), ['kernel-fs-read-only', 'kernel-oops']);
  t.equal(THRESHOLDS.kernelWindowMinutes, 60);

  // no kernel source in the snapshot, or it failed: no kernel findings; a failure is the sources rule's
  const none = healthySnapshot();
  t.same(kernelRule.run(none, new SnapshotIndex(none)), []);
  none.kernel = failed('cannot open the kernel log /dev/kmsg: EACCES');
  const r = buildReport(none);
  t.match(r.findings, [{ id: 'source-unavailable', severity: 'info', title: 'Could not read the kernel log (problems)' }]);
  t.same(r.sources.kernel, { ok: false, durationMs: 1, error: 'cannot open the kernel log /dev/kmsg: EACCES' });
});

t.test('every kernel finding is catalogued under the kernel rule, and every kernel entry was emitted', async (t) => {
  t.same(offCatalogue, []);
  const wanted = FINDINGS.filter((k) => k.rule === 'kernel').flatMap((k) => k.severities.map((sev) => `${k.id} ${sev}`));
  t.equal(wanted.length, KERNEL_PROBLEMS.length);
  t.same(wanted.filter((w) => !emitted.has(w)), []);
});

// the fixture re-timed so its last record was two minutes ago; each record must still be after
// pid 987 started (31 s after boot) for it to name the same task
const nowMonoUs = Number(process.hrtime.bigint() / 1000n);
const shift = nowMonoUs - 120_000_000 - 1_705_900_100;
const tooSoon = 1_290_144_000 + shift < 40_000_000 && `this machine booted ${Math.round(nowMonoUs / 1e6)} s ago: too recently to place the fixture's records after the fixture's processes started`;

t.test('GET /v1/triage through the real server: kernel findings from the kernel log file, attributed by /proc', { skip: tooSoon }, async (t) => {
  const kmsgPath = path.join(node.root, 'kernel-problems.txt');
  writeFileSync(kmsgPath, FIXTURE.replace(/^(\d+,\d+,)(\d+),/gm, (_, head: string, ts: string) => `${head}${Number(ts) + shift},`));
  const agent = await testApp(['--host-root', node.root, '--cri-endpoint', 'unix:///nonexistent/cri.sock', '--kmsg-path', kmsgPath, '--node-name', 'node-a']);
  t.teardown(() => agent.close());
  await agent.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = agent.app.server.address() as { port: number };
  const res = await fetch(`http://127.0.0.1:${addr.port}/v1/triage?window=100ms`);
  t.equal(res.status, 200);
  const r = (await res.json()) as { findings: Finding[]; sources: Record<string, { ok: boolean }> };
  t.equal(r.sources.kernel?.ok, true);
  t.match(
    r.findings.filter((f) => f.id === 'kernel-hung-task'),
    [{ subject: { podUid: POD_UID, containerId: SPIN_ID }, evidence: [{ source: 'kmsg', seq: 1201 }] }],
  );
  const ids = new Set(r.findings.map((f) => f.id));
  for (const k of KERNEL_PROBLEMS) t.ok(ids.has(k.id), `${k.id} found`);
});
