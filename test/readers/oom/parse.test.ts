import { readFileSync } from 'node:fs';
import t from 'tap';
import { splitKmsgText } from '../../../src/readers/kmsg/parse.js';
import { parseLegacyMemcg, parseOomReports, parseOomSummary, type KernelLine } from '../../../src/readers/oom/parse.js';
import { parseKubepodsPath } from '../../../src/readers/cgroup/kubepods-path.js';
import { kmsgFixture } from '../../fixtures/kmsg/oom-reports.js';

const lines = (name: string): KernelLine[] =>
  splitKmsgText(readFileSync(kmsgFixture(name), 'utf8')).map((r) => ({ text: r.text, monotonicUs: r.tsUsec, time: null, bootId: null, seq: r.seq, cursor: null }));

const ID1 = '673bde83b04ced70dae6e97e90f84a7fb544cd24f1231d89a518a54f4f71f9b1';
const ID2 = '765653c5da0e54fe1527461e648496d136b69be1d90f718c07adc4fb6e529410';

t.test('the two real memcg kills of the node capture (systemd driver)', async (t) => {
  const kills = parseOomReports(lines('oom-memcg-systemd.kmsg'), 'kmsg');
  t.equal(kills.length, 2);
  const [a, b] = kills as [NonNullable<(typeof kills)[0]>, NonNullable<(typeof kills)[0]>];
  t.match(a, {
    pid: 916,
    process: 'dd',
    uid: 0,
    constraint: 'CONSTRAINT_MEMCG',
    global: false,
    invokedBy: { process: 'dd', gfpMask: '0xcc0', gfpFlags: 'GFP_KERNEL', order: 0, oomScoreAdj: 0 },
    memcgUsageKb: 32768,
    memcgLimitKb: 32768,
    killed: { totalVmKb: 67796, anonRssKb: 32204, fileRssKb: 912, shmemRssKb: 0, pgtablesKb: 104, oomScoreAdj: 0 },
    monotonicUs: 89755557,
    evidence: { source: 'kmsg', firstSeq: 514, lastSeq: 568 },
  });
  t.ok(a.taskMemcg!.endsWith(`cri-containerd-${ID1}.scope`));
  t.equal(a.evidence.lines.length, 4);
  t.match(parseKubepodsPath(a.taskMemcg!), { podUid: '7f3c2a10-1111-4222-8333-944455556666', qos: 'burstable', containerId: ID1 });
  t.match(b, { pid: 938, process: 'dd', evidence: { firstSeq: 569, lastSeq: 625 } });
  t.match(parseKubepodsPath(b.taskMemcg!), { containerId: ID2 });
});

t.test('a global OOM (no memcg) still names the victim cgroup', async (t) => {
  const [k, ...rest] = parseOomReports(lines('oom-global.kmsg'), 'kmsg');
  t.equal(rest.length, 0);
  t.match(k, { pid: 4242, process: 'stress', global: true, constraint: 'CONSTRAINT_NONE', oomMemcg: null, memcgLimitKb: null, evidence: { firstSeq: 1201, lastSeq: 1220 } });
  t.match(parseKubepodsPath(k!.taskMemcg!), { qos: 'besteffort', podUid: 'c0ffee00-2222-4333-8444-555566667777' });
});

t.test('cgroupfs driver, guaranteed pod', async (t) => {
  const [k] = parseOomReports(lines('oom-memcg-cgroupfs.kmsg'), 'kmsg');
  t.match(k, { pid: 5150, process: 'java', uid: 1000, memcgLimitKb: 524288 });
  t.match(parseKubepodsPath(k!.taskMemcg!), { driver: 'cgroupfs', qos: 'guaranteed', podUid: 'aaaabbbb-cccc-4ddd-8eee-ffff00001111' });
});

t.test('only the key lines (journal --grep), legacy and partial reports', async (t) => {
  const key = lines('oom-memcg-systemd.kmsg').filter((l) => /invoked oom-killer|^memory: usage|^oom-kill:|Killed process/.test(l.text));
  t.equal(parseOomReports(key, 'journal').length, 2);
  const legacy = parseOomReports(
    [
      { text: 'Task in /kubepods/burstable/podx/abc killed as a result of limit of /kubepods/burstable/podx', monotonicUs: 1, time: null, bootId: null, seq: 1, cursor: null },
      { text: 'Memory cgroup out of memory: Kill process 1 (a) score 2 or sacrifice child', monotonicUs: 1, time: null, bootId: null, seq: 2, cursor: null },
      { text: 'Killed process 77 (a) total-vm:10kB, anon-rss:5kB, file-rss:0kB, shmem-rss:0kB', monotonicUs: 1, time: null, bootId: null, seq: 3, cursor: null },
    ],
    'kmsg',
  );
  t.equal(legacy.length, 0, 'a bare "Killed process" without the kernel prefix is not an OOM kill line');
  const only = parseOomReports(
    [{ text: 'Out of memory: Killed process 77 (a) total-vm:10kB, anon-rss:5kB, file-rss:0kB, shmem-rss:0kB', monotonicUs: 1, time: null, bootId: 'b', seq: null, cursor: 'c' }],
    'journal',
  );
  t.match(only, [{ pid: 77, global: true, taskMemcg: null, uid: null, evidence: { cursor: 'c' } }]);
});

t.test('hostile kernel lines: parsed in linear time', async (t) => {
  const line = (text: string, seq = 1) => ({ text, monotonicUs: seq, time: null, bootId: null, seq, cursor: null });
  const rep = (u: string, n: number) => u.repeat(Math.ceil(n / u.length)).slice(0, n);
  // shapes that make backtracking regexes take 35 s for this 4 KiB summary, 73 s for the 1 MiB legacy line
  const hostile = [
    'a'.repeat(1 << 20),
    'oom-kill:constraint=A' + rep(',nodemask=,cpuset=,mems_allowed=,oom_memcg=,task_memcg=,task=', 4000),
    'oom-kill:constraint=A' + rep(',nodemask=,cpuset=,mems_allowed=,oom_memcg=,task_memcg=,task=', 1000),
    'Task in ' + rep(' killed as a result of limit of ', 1 << 20) + 'x\n',
    'Out of memory: Killed process 1 (' + rep(') total-vm:1kB, (', 1 << 20),
  ];
  t.same(parseOomReports(hostile.map((h, i) => line(h, i)), 'kmsg'), []);
  t.equal(parseOomSummary(hostile[2]!), null);
  // a hostile comm with commas and keys inside still parses: the task is what follows the last ,task=
  const s = parseOomSummary('oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kubepods.slice/a,task_memcg=/kubepods.slice/a/b,task=x,task_memcg=y,pid=12,uid=0');
  t.same(s?.slice(1), ['CONSTRAINT_MEMCG', '(null)', '/', '0', '/kubepods.slice/a', undefined, '/kubepods.slice/a/b', 'x,task_memcg=y', '12', '0']);
  t.same(parseOomSummary('oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=stress,pid=7,uid=1000')?.slice(1), [
    'CONSTRAINT_NONE', '(null)', '/', '0', undefined, 'global_oom', '/user.slice', 'stress', '7', '1000',
  ]);
  t.same(parseLegacyMemcg('Task in /kubepods/pod1/c killed as a result of limit of /kubepods/pod1'), ['Task in /kubepods/pod1/c killed as a result of limit of /kubepods/pod1', '/kubepods/pod1/c', '/kubepods/pod1']);
});

t.test('memory.oom.group: the group kill is read as part of its report', async (t) => {
  const ID = 'a98aedb44857ac811d725fffb9f71f065b13711cf0e6aa365712cc9d36740c44';
  const group = lines('oom-group-6.1.0-57-amd64.kmsg');
  const scope = (k: { taskMemcg: string | null }) => parseKubepodsPath(k.taskMemcg!);
  t.test('the victim killed again by the group kill is one kill, attributed', async (t) => {
    const kills = parseOomReports(group, 'kmsg');
    t.equal(kills.length, 1);
    t.match(kills[0], { pid: 931, process: 'dd', constraint: 'CONSTRAINT_MEMCG', global: false, evidence: { firstSeq: 515, lastSeq: 567 } });
    t.match(scope(kills[0]!), { podUid: 'a716ff0b-57b7-44c0-8e62-9365c7e0d3c8', containerId: ID });
    t.ok(kills[0]!.evidence.lines.some((x) => x.endsWith('are going to be killed due to memory.oom.group set')));
  });
  t.test('another task of the group is a kill of that container; an exiting one is none', async (t) => {
    const last = group.at(-1)!;
    const more = [
      { ...last, seq: 570, text: 'Memory cgroup out of memory: OOM victim 940 (sh) is already exiting. Skip killing the task' },
      { ...last, seq: 571, text: last.text.replace('Killed process 931 (dd)', 'Killed process 933 (sleep)') },
    ];
    const kills = parseOomReports([...group, ...more], 'kmsg');
    t.equal(kills.length, 2);
    const [a, b] = kills;
    t.match(a, { pid: 931, evidence: { firstSeq: 515, lastSeq: 567 } });
    t.match(b, { pid: 933, process: 'sleep', constraint: 'CONSTRAINT_MEMCG', global: false, oomMemcg: a!.oomMemcg, taskMemcg: a!.taskMemcg, evidence: { firstSeq: 515, lastSeq: 571 } });
    t.match(scope(b!), { podUid: 'a716ff0b-57b7-44c0-8e62-9365c7e0d3c8', containerId: ID });
  });
  t.test('the next report begins afresh', async (t) => {
    const kills = parseOomReports([...group, ...lines('oom-memcg-systemd.kmsg')], 'kmsg');
    t.same(kills.map((k) => k.pid), [931, 916, 938]);
    t.match(kills[1], { evidence: { firstSeq: 514 } });
  });
});
