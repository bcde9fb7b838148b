/**
 * /v1/triage and `nodetruth triage` on one assembled node: the captured cgroup
 * tree (fixture), the captured runtime state (FAKE CRI server), the captured
 * OOM reports in a kernel log file (re-timed to two minutes ago), real journal
 * files with kubelet errors (systemd-journal-remote), and a kubelet healthz
 * stand-in. The spin container's cpu.stat advances during the window exactly
 * as it did on the node (captures/node-vm/cpu-throttling-cpu-stat.txt).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { capturedRuntime } from '../fixtures/captured-runtime.js';
import { exportEntry, JOURNAL_REMOTE, MACHINE_ID, writeJournal } from '../fixtures/journal/gen.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { CAPTURED, containerCgroupPath, cpuStat, OOM_CHILD_ID, OOM_MAIN_ID, POD_UID, realNode, SPIN_ID } from '../fixtures/node-tree.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';
import { REPO } from '../helpers/agent-process.js';

const node = realNode('systemd');
const cri = new FakeCriServer(capturedRuntime());
await cri.start();
const kubelet = createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('ok');
});
kubelet.listen(0, '127.0.0.1');
await once(kubelet, 'listening');
const healthz = `http://127.0.0.1:${(kubelet.address() as AddressInfo).port}/healthz`;
t.teardown(async () => {
  kubelet.close();
  await cri.stop();
  node.cleanup();
});

// the captured kernel log, shifted so its last record was two minutes ago
const nowMonoUs = Number(process.hrtime.bigint() / 1000n);
const raw = readFileSync(kmsgFixture('oom-memcg-systemd.kmsg'), 'utf8');
const lastTs = Math.max(...[...raw.matchAll(/^\d+,\d+,(\d+),/gm)].map((m) => Number(m[1])));
const kmsgPath = path.join(node.root, 'kmsg.txt');
writeFileSync(kmsgPath, raw.replace(/^(\d+,\d+,)(\d+),/gm, (_, head: string, ts: string) => `${head}${nowMonoUs - 120_000_000 + (Number(ts) - lastTs)},`));

// kubelet's journal: an image pull failing four and three minutes ago, older noise
const journalDir = path.join(node.root, 'var/log/journal');
const haveJournal = existsSync(JOURNAL_REMOTE);
if (haveJournal) {
  const BOOT = '13aee3a87a774e2d9686f3c19d408b06';
  const entry = (secondsAgo: number, sev: string, text: string) => {
    const us = (Date.now() - secondsAgo * 1000) * 1000;
    const d = new Date(us / 1000);
    const hdr = `${sev}${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')} ${d.toISOString().slice(11, 19)}.${String(us % 1e6).padStart(6, '0')}     702 `;
    return exportEntry([
      ['__REALTIME_TIMESTAMP', String(us)],
      ['__MONOTONIC_TIMESTAMP', String(Math.max(1, nowMonoUs - secondsAgo * 1e6))],
      ['_BOOT_ID', BOOT],
      ['_MACHINE_ID', MACHINE_ID],
      ['_HOSTNAME', 'node1'],
      ['_TRANSPORT', 'stdout'],
      ['_SYSTEMD_UNIT', 'kubelet.service'],
      ['SYSLOG_IDENTIFIER', 'kubelet'],
      ['_COMM', 'kubelet'],
      ['_PID', '702'],
      ['PRIORITY', '6'],
      ['MESSAGE', hdr + text],
    ]);
  };
  await writeJournal(journalDir, 'system', [
    entry(3600, 'E', 'pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \\"StartContainer\\" for \\"old\\" with ErrImagePull" pod="shop/old"'),
    entry(240, 'E', 'log.go:32] "PullImage from image service failed" err="rpc error: code = NotFound desc = failed to pull and unpack image \\"docker.io/library/nginx:1.99\\": not found" image="nginx:1.99"'),
    entry(180, 'E', 'pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \\"StartContainer\\" for \\"web\\" with ErrImagePull: \\"failed to pull and unpack image\\"" pod="shop/web-0"'),
    entry(60, 'I', 'kubelet.go:2412] "SyncLoop (PLEG): event for pod" pod="default/lab"'),
  ]);
}

const flags = ['--host-root', node.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', kmsgPath, '--kubelet-healthz', healthz, '--node-name', 'node-a'];
const spinStat = path.join(node.root, 'sys/fs/cgroup', containerCgroupPath('systemd', 'burstable', POD_UID, SPIN_ID), 'cpu.stat');

t.test('GET /v1/triage: the findings this node shows, each with its evidence', async (t) => {
  // The spinner as the kernel counts it: one CFS period every 100 ms, every one throttled, at the
  // captured rates (CAPTURED.spin, 3 s apart: +31 periods, +31 throttled). The file moves on by
  // itself, so the two samples differ however late the first one is taken on a loaded machine
  // (a single rewrite at a fixed time would race the first sample). Replaced by rename: a read sees one state.
  writeFileSync(spinStat, CAPTURED.spin.cpuStat);
  let tick = 0;
  const ticker = setInterval(() => {
    tick++;
    const text = cpuStat({ usage: 1824308 + 9659 * tick, periods: 169 + tick, throttled: 168 + tick, throttledUsec: 14961853 + 89764 * tick });
    writeFileSync(`${spinStat}.next`, text);
    renameSync(`${spinStat}.next`, spinStat);
  }, 100);
  t.teardown(() => clearInterval(ticker));
  const agent = await testApp(flags);
  t.teardown(() => agent.close());
  const res = await agent.app.inject({ method: 'GET', url: '/v1/triage?window=3s' });
  clearInterval(ticker);
  t.equal(res.statusCode, 200);
  const r = res.json();
  t.equal(r.node, 'node-a');
  t.ok(r.windowMs >= 3000);
  const byId = (id: string) => r.findings.filter((f: { id: string }) => f.id === id);
  t.same(
    byId('oom-kill').map((f: { subject: { container: string } }) => f.subject.container).sort(),
    ['oom-child', 'oom-main'],
    'both kernel-reported kills, named by the runtime',
  );
  t.match(byId('oom-kill-misreported'), [{ subject: { container: 'oom-main', containerId: OOM_MAIN_ID }, evidence: [{ source: 'cri', excerpt: /exitCode 137, reason "Error"/ }, { source: 'kmsg', seq: 625 }] }]);
  t.match(byId('cpu-throttling'), [{ subject: { container: 'spin', pod: 'lab' }, detail: /\b(\d+) of \1 CFS periods throttled/, evidence: [{ path: /cpu\.stat$/, excerpt: /^nr_periods \+(\d+) nr_throttled \+\1\b/ }] }]);
  if (haveJournal) {
    t.match(byId('kubelet-image-pull-errors'), [{ detail: /^2 kubelet log lines in the last 10 minutes/, evidence: [{ source: 'journal', cursor: /^s=/ }, { source: 'journal' }] }]);
    t.equal(r.sources.kubeletJournal.ok, true);
  }
  t.same(byId('kubelet-unhealthy'), [], 'the healthz stand-in answers ok');
  t.same(byId('runtime-unreachable'), []);
  t.notOk(r.findings.some((f: { id: string }) => f.id === 'source-unavailable'), 'every source answered');
  t.ok(['warning', 'critical'].includes(r.verdict));
  t.same(r.counts.warning + r.counts.critical + r.counts.info, r.findings.length);
  t.ok(JSON.stringify(r).includes(OOM_CHILD_ID), 'full container ids are in the subjects');
});

t.test('?format=text is the terminal report; bad windows are 400', async (t) => {
  const agent = await testApp(flags);
  t.teardown(() => agent.close());
  const text = await agent.app.inject({ method: 'GET', url: '/v1/triage?window=200ms&format=text' });
  t.equal(text.headers['content-type'], 'text/plain; charset=utf-8');
  t.match(text.body, /^nodetruth triage of node-a at .*: (WARNING|CRITICAL) \(/);
  t.match(text.body, /\[oom-kill-misreported\]/);
  const bad = await agent.app.inject({ method: 'GET', url: '/v1/triage?window=1h' });
  t.equal(bad.statusCode, 400);
  t.match(bad.json().detail, /window must be a duration from 100ms to 30s/);
});

t.test('with the runtime gone: a critical finding, the cgroup and kernel rules still answer', async (t) => {
  const agent = await testApp(['--host-root', node.root, '--cri-endpoint', `unix://${node.root}/run/gone.sock`, '--kmsg-path', kmsgPath, '--kubelet-healthz', healthz]);
  t.teardown(() => agent.close());
  const r = (await agent.app.inject({ method: 'GET', url: '/v1/triage?window=100ms' })).json();
  t.match(r.findings[0], { id: 'runtime-unreachable', severity: 'critical', evidence: [{ source: 'cri', excerpt: /ENOENT/ }] });
  t.equal(r.verdict, 'critical');
  const ooms = r.findings.filter((f: { id: string }) => f.id === 'oom-kill');
  t.equal(ooms.length, 2, 'OOM kills still found, by pod UID and container id');
  t.same(ooms.map((f: { subject: Record<string, string> }) => f.subject.podUid), [POD_UID, POD_UID]);
  t.equal(r.sources.cgroups.ok, true);
});

// A slow runtime is a SourceError coded runtime_timeout; the rule matches that code (never an HTTP status)
t.test('with the runtime slower than --cri-timeout: runtime-not-answering, not unreachable', async (t) => {
  const slow = new FakeCriServer(capturedRuntime());
  await slow.start();
  slow.delayMs = 1500; // past the 300ms deadline; the fake answers late, as a wedged containerd would
  const agent = await testApp(['--host-root', node.root, '--cri-endpoint', slow.endpoint, '--cri-timeout', '300ms', '--kmsg-path', kmsgPath, '--kubelet-healthz', healthz]);
  t.teardown(async () => {
    await agent.close();
    await slow.stop();
  });
  const r = (await agent.app.inject({ method: 'GET', url: '/v1/triage?window=100ms' })).json();
  t.match(r.findings[0], { id: 'runtime-not-answering', severity: 'critical', evidence: [{ source: 'cri', excerpt: /did not answer within 300ms/ }] });
  t.equal(r.findings.filter((f: { id: string }) => f.id === 'runtime-unreachable').length, 0);
});

const node24 = path.join(REPO, 'node_modules/node/bin/node');
t.test('nodetruth triage: text, --json, exit codes', { skip: existsSync(node24) ? false : 'node 24 not installed in node_modules' }, async (t) => {
  const run = async (args: string[]) => {
    // without tap's coverage hooks in the child: they make each start take many seconds
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(NODE_OPTIONS|NODE_V8_COVERAGE|_TAPJS_.*|TAP_.*)$/.test(k)));
    const child = spawn(node24, ['--import', 'tsx', path.join(REPO, 'src/cli.ts'), 'triage', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const [code] = (await once(child, 'exit')) as [number];
    return { code, stdout, stderr };
  };
  const json = await run([...flags, '--json', '--window', '100ms']);
  const r = JSON.parse(json.stdout);
  t.equal(json.code, { ok: 0, warning: 1, critical: 2 }[r.verdict as string], `exit ${json.code} for verdict ${r.verdict}`);
  t.ok(r.findings.some((f: { id: string }) => f.id === 'oom-kill-misreported'));
  const down = await run(['--host-root', node.root, '--cri-endpoint', `unix://${node.root}/run/gone.sock`, '--kmsg-path', kmsgPath, '--kubelet-healthz', healthz, '--window=100ms']);
  t.equal(down.code, 2, 'critical: exit 2');
  t.match(down.stdout, /^nodetruth triage of [^\n]*: CRITICAL/);
  t.match(down.stdout, /\[runtime-unreachable\]/);
  t.notMatch(down.stdout, /\x1b\[/, 'no colour when not a terminal');
  const bad = await run(['--no-such-flag']);
  t.equal(bad.code, 3, 'bad flags: exit 3, not a verdict');
  t.match(bad.stderr, /nodetruth triage: .*no-such-flag/);
});
