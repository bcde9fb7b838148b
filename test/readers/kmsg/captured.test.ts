// The kernel problem table over kernel lines a real kernel printed: the captures of the
// node VM (test/fixtures/kmsg/captured-<kernel>.kmsg, written by
// test/e2e/cluster/host-check.ts under NODETRUTH_E2E_WRITE_KMSG=1; each file's header says
// how), where the e2e harness froze a file system under a pod's writers and filled the
// conntrack table.
// The built fixture (kernel-problems.kmsg) follows the format strings; these are the
// kernel's own output, with everything else it printed around them (an OOM report,
// mounts, hung-task stacks), which must match no row.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { KernelProblemsSource } from '../../../src/view/kernel-problems.js';
import { splitKmsgText } from '../../../src/readers/kmsg/parse.js';
import { scanKernelProblems } from '../../../src/view/kernel-problems.js';
import { kindOf } from '../../../src/triage/findings.js';
import { KmsgReader } from '../../../src/readers/kmsg/reader.js';
import { parseKubepodsPath } from '../../../src/readers/cgroup/kubepods-path.js';
import { parseOomReports } from '../../../src/readers/oom/parse.js';
import { kernelRule } from '../../../src/triage/rules/kernel.js';
import { SnapshotIndex } from '../../../src/triage/rules/index.js';
import { healthySnapshot, NOW, ok } from '../../fixtures/triage-snapshot.js';
import { KMSG_DIR } from '../../fixtures/kmsg/oom-reports.js';

const files = readdirSync(KMSG_DIR).sort();
/** the whole-run captures (OOM, hung tasks, conntrack) */
const captures = files.filter((f) => /^captured-.+\.kmsg$/.test(f) && !f.endsWith('-fs.kmsg'));
/** the filesystem and disk captures (ext4's error path, a null_blk disk's bad blocks) */
const fsCaptures = files.filter((f) => /^captured-.+-fs\.kmsg$/.test(f));

t.test('there is a real capture', async (t) => {
  t.ok(captures.length >= 1, `captured-*.kmsg in ${KMSG_DIR}`);
  t.ok(fsCaptures.length >= 1, `captured-*-fs.kmsg in ${KMSG_DIR}`);
});

for (const name of captures) {
  const file = path.join(KMSG_DIR, name);
  const text = readFileSync(file, 'utf8');
  const release = name.slice('captured-'.length, -'.kmsg'.length);
  const header = text.split('\n').filter((l) => l.startsWith('#')).join('\n');
  const records = splitKmsgText(text);
  /** what the harness set, as its header says */
  const hungSecs = Number(/kernel\.hung_task_timeout_secs=(\d+)/.exec(header)?.[1]);
  const conntrackMax = Number(/nf_conntrack_max=(\d+)/.exec(header)?.[1]);

  t.test(`${name}: the capture is what its header says`, async (t) => {
    t.match(header, new RegExp(`Linux ${release.replaceAll('.', '\\.')}\\b`), 'the header names the kernel of the file name');
    t.ok(Number.isInteger(hungSecs) && hungSecs > 0, `hung_task_timeout_secs in the header: ${hungSecs}`);
    t.ok(Number.isInteger(conntrackMax) && conntrackMax > 0, `nf_conntrack_max in the header: ${conntrackMax}`);
    t.ok(records.length > 50, `${records.length} records`);
    checkRecords(t, text, records);
  });

  t.test(`${name}: the kernel problem table finds the hung tasks and the full conntrack table, and nothing else`, async (t) => {
    const s = await scanKernelProblems(records);
    // the OOM report, the hung tasks' stacks, mounts and the rest of what the kernel said match no other row
    t.same(Object.keys(s.counts).sort(), ['kernel-conntrack-full', 'kernel-hung-task'], JSON.stringify(s.counts));
    const hung = s.problems.filter((p) => p.id === 'kernel-hung-task');
    t.ok(hung.length >= 1);
    for (const p of hung) {
      t.match(p.text, /^INFO: task .+:\d+ blocked for more than \d+ seconds\.$/, 'the kernel\'s line, whole');
      t.equal(p.level, 3, 'pr_err');
      t.ok(p.pid !== null && p.pid > 1, `pid ${p.pid}`);
      t.equal(p.text, `INFO: task ${p.comm}:${p.pid} blocked for more than ${p.seconds} seconds.`, 'comm, pid and seconds are what the line says');
      t.ok(p.seconds !== null && p.seconds >= hungSecs, `${p.seconds} s: at least the timeout the harness set (${hungSecs} s), more at each later report`);
    }
    t.ok(hung.some((p) => p.comm === 'sh'), "the frozen-writer pod's shell writers");
    const ct = s.problems.filter((p) => p.id === 'kernel-conntrack-full');
    t.ok(ct.length >= 1);
    for (const p of ct) {
      t.equal(p.text, 'nf_conntrack: nf_conntrack: table full, dropping packet', 'pr_fmt doubles the module name');
      t.equal(p.level, 4, 'net_warn_ratelimited');
      t.equal(p.netns, null, 'the host netns: no "in netns" in the line');
    }
  });

  t.test(`${name}: the kernel rule's findings over the capture`, async (t) => {
    const found = await kernelFindings(t, file, records);
    t.same([...new Set(found.map((f) => f.id))].sort(), ['kernel-conntrack-full', 'kernel-hung-task']);
    const hung = found.find((f) => f.id === 'kernel-hung-task')!;
    t.equal(hung.severity, kindOf('kernel-hung-task').severities[0]);
    // every report of the capture (the hung tasks' pids do not exist here: not attributed)
    const reports = (await scanKernelProblems(records)).problems.filter((p) => p.id === 'kernel-hung-task');
    const pids = [...new Set(reports.map((p) => `${p.comm} (pid ${p.pid})`))].slice(0, 5).join(', ');
    const longest = Math.max(...reports.map((p) => p.seconds ?? 0));
    t.ok(longest >= hungSecs);
    t.match(hung.detail, new RegExp(`^${reports.length} kernel records in the last 60 minutes \\(.+\\); tasks ${pids.replace(/[()]/g, '\\$&')}; up to ${longest} s; not attributed to a pod: pid \\d+ has exited$`));
    t.ok(hung.evidence.length >= 1);
    for (const e of hung.evidence) {
      t.equal(e.source, 'kmsg');
      const r = records.find((x) => x.seq === e.seq);
      t.ok(r, `evidence seq ${e.seq} is a record of the capture`);
      t.ok(e.excerpt?.includes(r!.text), 'the excerpt holds the record\'s text');
    }
    const ct = found.find((f) => f.id === 'kernel-conntrack-full')!;
    t.equal(ct.severity, 'critical');
    t.equal(ct.title, 'The conntrack table is full: new connections are dropped');
    t.ok(ct.evidence.every((e) => e.source === 'kmsg' && records.some((r) => r.seq === e.seq && e.excerpt?.includes(r.text))));
  });

  t.test(`${name}: the OOM report in it (the oom-victim pod's dd at 32 MiB) parses as a memcg kill of a pod`, async (t) => {
    const kills = parseOomReports(records.map((r) => ({ text: r.text, monotonicUs: r.tsUsec, time: null, bootId: null, seq: r.seq, cursor: null })), 'kmsg');
    t.equal(kills.length, 1, 'one report');
    const k = kills[0]!;
    t.match(k, { process: 'dd', constraint: 'CONSTRAINT_MEMCG', global: false, memcgLimitKb: 32 * 1024, invokedBy: { process: 'dd' } });
    const where = parseKubepodsPath(k.taskMemcg ?? '');
    t.ok(where?.podUid && where.containerId, `task_memcg names a pod and a container: ${k.taskMemcg}`);
    // the limit hit: the container's own, or its pod's (kubelet sets the pod's memory.max to the
    // sum of its containers' limits, so a one-container pod's kill may be counted there)
    t.ok(k.oomMemcg && (k.oomMemcg === k.taskMemcg || parseKubepodsPath(k.oomMemcg)?.podUid === where?.podUid), `the limit of the container or its pod: ${k.oomMemcg}`);
    t.ok(k.evidence.firstSeq !== null && k.evidence.firstSeq <= k.evidence.lastSeq!, 'kmsg sequence numbers of the report');
  });
}

/** records parse one a line, in sequence and time order */
/**
 * The kernel rule's findings over a capture, read through the real source from an empty host
 * root: boot placed so the capture's last record is one minute before NOW (within the rule's
 * window); the captured pids do not exist here, so nothing is attributed to a pod.
 */
async function kernelFindings(t: Test, file: string, records: ReturnType<typeof splitKmsgText>) {
  const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-captured-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const last = records[records.length - 1]!;
  const bootUs = (NOW - 60_000) * 1000 - last.tsUsec;
  const fs = new HostFs(root);
  const problems = await new KernelProblemsSource(new KmsgReader(fs, file), fs, () => bootUs).read();
  const snap = healthySnapshot();
  snap.kernel = ok(problems);
  return kernelRule.run(snap, new SnapshotIndex(snap));
}

function checkRecords(t: Test, text: string, records: ReturnType<typeof splitKmsgText>): void {
  const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith(' '));
  t.equal(records.length, lines.length, 'every record line parses');
  for (let i = 1; i < records.length; i++) {
    if (records[i]!.seq <= records[i - 1]!.seq || records[i]!.tsUsec < records[i - 1]!.tsUsec) {
      t.fail(`record ${records[i]!.seq} does not follow ${records[i - 1]!.seq}`);
      break;
    }
  }
}

// ext4 remounted read-only by its own error path and a disk returning I/O errors, as the
// kernel printed them: a loop-mounted ext4 (errors=remount-ro) given ext4_error() through
// /sys/fs/ext4/<dev>/trigger_fs_error, a null_blk disk with bad blocks, a staging driver
// loaded (taint C). Everything else the kernel said around them (the mount, the partition
// scan's complaints, jbd2, the staging warning, the unmount) must match no row.
for (const name of fsCaptures) {
  const file = path.join(KMSG_DIR, name);
  const text = readFileSync(file, 'utf8');
  const release = name.slice('captured-'.length, -'-fs.kmsg'.length);
  const header = text.split('\n').filter((l) => l.startsWith('#')).join('\n');
  const records = splitKmsgText(text);
  const loop = /a 16 MiB ext4 on (loop\d+)/.exec(header)?.[1] ?? '';
  const disk = /a null_blk disk (\S+) \(configfs\)/.exec(header)?.[1] ?? '';

  t.test(`${name}: the capture is what its header says`, async (t) => {
    t.match(header, new RegExp(`Linux ${release.replaceAll('.', '\\.')}\\b`), 'the header names the kernel of the file name');
    t.match(loop, /^loop\d+$/, 'the header names the loop device');
    t.match(disk, /^[a-z][\w-]*$/, 'the header names the null_blk disk');
    t.ok(records.length > 10, `${records.length} records`);
    checkRecords(t, text, records);
    t.ok(records[0]!.text.startsWith(`EXT4-fs (${loop}): mounted filesystem`), 'it starts at the mount of the loop device');
  });

  t.test(`${name}: the kernel problem table finds the filesystem error, the read-only remount and the I/O errors, and nothing else`, async (t) => {
    const s = await scanKernelProblems(records);
    t.same(Object.keys(s.counts).sort(), ['kernel-fs-error', 'kernel-fs-read-only', 'kernel-io-error'], JSON.stringify(s.counts));
    const of = (id: string) => s.problems.filter((p) => p.id === id);

    const ro = of('kernel-fs-read-only');
    t.ok(ro.length >= 1);
    for (const p of ro) {
      t.equal(p.text, `EXT4-fs (${loop}): Remounting filesystem read-only`, "ext4_msg's line, whole");
      t.equal(p.level, 2, 'KERN_CRIT');
      t.equal(p.device, loop);
    }

    const fe = of('kernel-fs-error');
    // the trigger's ext4_error(), jbd2 aborting the journal, then the writes that meet the aborted journal
    t.ok(fe.some((p) => new RegExp(`^EXT4-fs error \\(device ${loop}\\): trigger_test_error:\\d+: comm sh: e2e: error made by the harness$`).test(p.text)), 'the trigger\'s error');
    t.ok(fe.some((p) => p.text === `Aborting journal on device ${loop}-8.`), 'jbd2 names the journal <dev>-<inode>');
    for (const p of fe) {
      t.match(p.text, new RegExp(`^(EXT4-fs error \\(device ${loop}\\)[ :]|Aborting journal on device ${loop}-8\\.$)`));
      t.equal(p.device, loop, `${p.text}: the device`);
    }

    const io = of('kernel-io-error');
    t.ok(io.some((p) => new RegExp(`^I/O error, dev ${disk}, sector 0 op 0x0:\\(READ\\) flags 0x\\w+ phys_seg 1 prio class \\d+$`).test(p.text)), 'blk_print_req_error');
    t.ok(io.some((p) => p.text === `Buffer I/O error on dev ${disk}, logical block 0, async page read`), 'the page cache read (partition scan, buffered dd)');
    for (const p of io) {
      t.equal(p.device, disk, `${p.text}: the device`);
      t.equal(p.level, 3, 'KERN_ERR');
    }
    // around them, matching nothing: the partition scan's own complaints, the staging warning
    const none = (pred: (x: string) => boolean, what: string) => {
      const r = records.filter((x) => pred(x.text));
      t.ok(r.length >= 1, `the capture has ${what}`);
      for (const x of r) t.notOk(s.problems.some((p) => p.seq === x.seq), `${x.text}: no row`);
    };
    none((x) => x.includes('unable to read partition table'), 'the partition scan giving up');
    none((x) => x.includes('module is from the staging directory'), "the staging driver's warning (taint C)");
  });

  t.test(`${name}: the kernel rule's findings over the capture, one per device`, async (t) => {
    const found = await kernelFindings(t, file, records);
    t.same(found.map((f) => `${f.id} ${f.severity}: ${f.title}`).sort(), [
      `kernel-fs-error warning: A filesystem reports errors on ${loop}`,
      `kernel-fs-read-only critical: A filesystem was remounted read-only or shut down after errors on ${loop}`,
      `kernel-io-error warning: A block device returns I/O errors on ${disk}`,
    ]);
    for (const f of found) {
      t.notOk(f.subject, `${f.id}: a device, no pod`);
      t.ok(f.evidence.length >= 1);
      for (const e of f.evidence) {
        t.equal(e.source, 'kmsg');
        const r = records.find((x) => x.seq === e.seq);
        t.ok(r && e.excerpt?.includes(r.text), `${f.id}: evidence seq ${e.seq} is a record of the capture, its text in the excerpt`);
      }
    }
    const ro = found.find((f) => f.id === 'kernel-fs-read-only')!;
    t.match(ro.detail, /^\d+ kernel records? this boot \(/, 'a read-only remount lasts: counted this boot');
  });
}
