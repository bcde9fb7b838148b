/**
 * The node facts from a fixture laid out as a real host: the captured node's
 * tree plus a kubelet process whose --config names a kubeadm-shaped config file, real
 * PEM certificates (selfsigned; one expired, one near its NotAfter) behind the dated
 * link kubelet writes, D and Z processes in pods, taint and conntrack files.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { firstCertificate } from '../../../src/readers/node/certs.js';
import { CriLatencyTracker } from '../../../src/readers/node/cri-latency.js';
import { nodeFacts } from '../../../src/readers/node/facts.js';
import { parseThresholdValue, readKubeletConfig } from '../../../src/readers/node/kubelet-config.js';
import { walkProcStates } from '../../../src/readers/node/proc-states.js';
import { mountAnswers, statfs, statfsGuard } from '../../../src/readers/node/statfs.js';
import { parseTaint } from '../../../src/readers/node/taint.js';
import { DAY, factsHost, KUBELET_CONFIG, NOW, pem } from '../../fixtures/node-facts.js';
import { OOM_CHILD_ID, POD_UID, realNode } from '../../fixtures/node-tree.js';

t.test('taint: decoded with our table, unknown bits kept', async (t) => {
  t.same(parseTaint('0\n'), { value: 0, flags: [], letters: '' });
  const x = parseTaint('16896\n')!;
  t.equal(x.letters, 'WL');
  t.same(x.flags.map((f) => f.bit), [9, 14]);
  t.equal(parseTaint(String(2 ** 40))!.flags[0]!.letter, '?');
  t.equal(parseTaint('tainted'), null);
  t.equal(parseTaint('9'.repeat(400)), null, 'bounded');
});

const KUBELET_PID = 702;

/**
 * kubelet's config written to a fresh host root at `configPath`, read as the agent reads it:
 * with `argv`, a kubelet process whose cmdline it is (its --config names the file);
 * without, no kubelet runs and the file is found at its known path.
 */
async function kubeletConfigOn(t: { teardown: (f: () => void) => void }, configPath: string, configText: string, argv: string[] | null) {
  const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-kubelet-config-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(path.dirname(path.join(root, configPath)), { recursive: true });
  writeFileSync(path.join(root, configPath), configText);
  if (argv) {
    mkdirSync(path.join(root, 'proc', String(KUBELET_PID)), { recursive: true });
    writeFileSync(path.join(root, 'proc', String(KUBELET_PID), 'cmdline'), `${argv.join('\0')}\0`);
  }
  return readKubeletConfig(new HostFs(root), argv ? KUBELET_PID : null);
}
const kubeletWith = (t: { teardown: (f: () => void) => void }, configText: string, ...flags: string[]) => kubeletConfigOn(t, '/c', configText, ['/usr/bin/kubelet', '--config=/c', ...flags]);

t.test('eviction thresholds: config, flags over config, defaults only where kubelet applies them', async (t) => {
  const r = await kubeletConfigOn(t, '/var/lib/kubelet/config.yaml', KUBELET_CONFIG, null);
  t.match(r.eviction, { configPath: '/var/lib/kubelet/config.yaml', foundBy: 'default-path', error: null });
  t.same(r.eviction.thresholds.map((x) => [x.signal, x.kind, x.value, x.from]), [
    ['memory.available', 'hard', '500Mi', 'config'],
    ['nodefs.available', 'hard', '20%', 'config'],
    ['nodefs.available', 'soft', '30%', 'config'],
  ], 'a partial evictionHard does not inherit the defaults');
  const none = await kubeletWith(t, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n');
  t.match(none.eviction, { configPath: '/c', foundBy: 'cmdline' });
  t.same(none.eviction.thresholds.map((x) => `${x.signal}<${x.value} ${x.from}`), ['memory.available<100Mi default', 'nodefs.available<10% default', 'nodefs.inodesFree<5% default', 'imagefs.available<15% default', 'imagefs.inodesFree<5% default']);
  const merged = await kubeletWith(t, `${KUBELET_CONFIG}mergeDefaultEvictionSettings: true\n`);
  t.equal(merged.eviction.thresholds.filter((x) => x.from === 'default').length, 3);
  const flags = await kubeletWith(t, KUBELET_CONFIG, '--eviction-hard=memory.available<1Gi,imagefs.available<25%');
  t.same(flags.eviction.thresholds.filter((x) => x.kind === 'hard').map((x) => `${x.signal}<${x.value}`), ['memory.available<1Gi', 'imagefs.available<25%']);
  t.same(parseThresholdValue('100Mi'), { ratio: null, quantity: 100 * 2 ** 20 });
  t.same(parseThresholdValue('12.5%'), { ratio: 0.125, quantity: null });
  t.equal(parseThresholdValue('1e9'), null);
  // hostile YAML: an alias bomb is refused, bad values skipped with a reason
  const bomb = `a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n`;
  t.match((await kubeletWith(t, bomb)).eviction.error, /not YAML|alias/i);
  t.match((await kubeletWith(t, 'evictionHard:\n  nodefs.available: "lots"\n  bogus.signal: "1%"\n')).eviction.error, /not a quantity.*unknown signal|unknown signal.*not a quantity/);
});

t.test('certificates: the first CERTIFICATE block only, never the key', async (t) => {
  const p = await pem(NOW - DAY, NOW + DAY, 'x');
  const c = firstCertificate(p.cert + p.key);
  t.type(c, 'object');
  t.equal(firstCertificate(p.key), 'no CERTIFICATE block in it');
  t.match(firstCertificate('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'), /^not a certificate/);
});

t.test('D and Z processes by pod, with wchan; the walk is bounded and says where it stopped', async (t) => {
  const fx = await factsHost('systemd');
  t.teardown(fx.cleanup);
  const fs = new HostFs(fx.root);
  const w = await walkProcStates(fs);
  t.equal(w.kubeletPid, 702);
  t.equal(w.states.dState, 2);
  t.equal(w.states.zState, 3);
  t.same(w.states.byPod, [
    { podUid: POD_UID, containerId: OOM_CHILD_ID, state: 'Z', count: 3 },
    { podUid: POD_UID, containerId: OOM_CHILD_ID, state: 'D', count: 1 },
    { podUid: null, containerId: null, state: 'D', count: 1 },
  ]);
  t.match(w.states.samples.find((p) => p.pid === 2001), { comm: 'dd', wchan: 'percpu_rwsem_wait', podUid: POD_UID });
  t.equal(w.states.samples.find((p) => p.pid === 2100)!.wchan, null, 'wchan 0: none');
  t.equal(w.states.cut, null);
  const cut = await walkProcStates(fs, { maxPids: 3 });
  t.match(cut.states.cut, /only the first 3/);
});

t.test("the walk's budget counts its own work, not the loop's other work between its slices", async (t) => {
  const fx = await factsHost('systemd');
  t.teardown(fx.cleanup);
  const fs = new HostFs(fx.root);
  const all = (await walkProcStates(fs)).states.scanned;
  t.ok(all >= 5, `the fixture has ${all} processes`);
  // a starved node: another 60 ms of work in every turn of the loop, one pid per slice, so the
  // walk's waits alone pass its budget many times over
  let busy = true;
  const hog = () => {
    if (!busy) return;
    const until = performance.now() + 60;
    while (performance.now() < until);
    setImmediate(hog);
  };
  setImmediate(hog);
  try {
    const t0 = Date.now();
    const starved = await walkProcStates(fs, { batch: 1, budgetMs: 200 });
    t.comment(`the walk took ${Date.now() - t0} ms against its 200 ms budget`);
    t.equal(starved.states.cut, null, 'every process seen although the walk took longer than its budget');
    t.equal(starved.states.scanned, all);
    t.equal(starved.kubeletPid, 702);
    const walled = await walkProcStates(fs, { batch: 1, wallMs: 25 });
    t.match(walled.states.cut, /^stopped after \d+ of \d+ processes: the walk waited past 25 ms$/);
  } finally {
    busy = false;
  }
  const spent = await walkProcStates(fs, { batch: 1, budgetMs: 0 });
  t.match(spent.states.cut, /^stopped after 1 of \d+ processes: the walk's 0 ms budget was spent$/);
  const ac = new AbortController();
  ac.abort();
  t.match((await walkProcStates(fs, {}, ac.signal)).states.cut, /^stopped after 0 of \d+ processes: the request ended$/);
});

t.test('the /proc walk reads stat synchronously but never through a link: a planted stat link and a pid-named dir link are not counted', async (t) => {
  const fx = await factsHost('systemd');
  t.teardown(fx.cleanup);
  const fs = new HostFs(fx.root);
  const before = await walkProcStates(fs);
  // a tenant cannot make these in procfs; a host-root tree that is not procfs could hold them
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const outside = path.join(fx.root, '..', `outside-stat-${process.pid}`);
  writeFileSync(outside, '94242 (evil) D 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 1\n');
  t.teardown(() => import('node:fs').then((m) => m.rmSync(outside, { force: true })));
  mkdirSync(path.join(fx.root, 'proc/94242'));
  symlinkSync(outside, path.join(fx.root, 'proc/94242/stat'));
  symlinkSync(path.join(fx.root, 'proc/702'), path.join(fx.root, 'proc/94343'));
  const after = await walkProcStates(fs);
  t.equal(after.states.scanned, before.states.scanned, 'neither link was read');
  t.equal(after.states.dState, before.states.dState);
  t.notOk(after.states.samples.some((p) => p.pid === 94242));
});

t.test('all facts from the host tree', async (t) => {
  const fx = await factsHost('systemd');
  t.teardown(fx.cleanup);
  const warnings: string[] = [];
  const f = await nodeFacts(new HostFs(fx.root), { warnings, nowMs: NOW });
  t.match(f.conntrack, { loaded: true, entries: 262101, limit: 262144, ratio: 0.999836 });
  t.equal(f.taint?.letters, 'WL');
  t.equal(f.eviction.configPath, '/etc/kubernetes/kubelet-config.yaml');
  t.equal(f.eviction.foundBy, 'cmdline');
  t.ok(f.eviction.checks.some((c) => c.signal === 'nodefs.available' && c.kind === 'hard' && c.path === '/var/lib/kubelet'));
  const [client, serving] = f.certificates;
  t.match(client, { role: 'client', path: '/var/lib/kubelet/pki/kubelet-client-current.pem', target: '/var/lib/kubelet/pki/kubelet-client-2025-11-29-19-45-00.pem', present: true, subject: /CN=system:node:node-a/ });
  t.ok(client!.secondsLeft! < 0 && client!.secondsLeft! > -3 * 86400, 'expired two days ago');
  t.match(serving, { role: 'serving', path: '/var/lib/kubelet/pki/kubelet.crt', present: true });
  t.ok(serving!.secondsLeft! > 2 * 86400 && serving!.secondsLeft! <= 3 * 86400);
  t.notMatch(JSON.stringify(f), /PRIVATE KEY/, 'the key never leaves');
  t.same(warnings, []);
});

t.test('a link in pki that leads out of the host root is refused, the rest stands', async (t) => {
  const fx = await factsHost('systemd');
  t.teardown(fx.cleanup);
  const pki = path.join(fx.root, 'var/lib/kubelet/pki');
  // an absolute link resolves inside the root (securejoin): ../../../../ climbs no further than it
  const { rmSync } = await import('node:fs');
  rmSync(path.join(pki, 'kubelet-client-current.pem'));
  symlinkSync('../../../../../etc/shadow', path.join(pki, 'kubelet-client-current.pem'));
  const f = await nodeFacts(new HostFs(fx.root), { nowMs: NOW });
  t.match(f.certificates[0], { present: false, error: 'absent', target: '/etc/shadow' }, 'the host root\'s /etc/shadow (absent there), never the agent\'s');
});

t.test('conntrack not loaded; no kubelet config anywhere', async (t) => {
  const fx = realNode('systemd');
  t.teardown(fx.cleanup);
  const f = await nodeFacts(new HostFs(fx.root), { nowMs: NOW });
  t.match(f.conntrack, { loaded: false, reason: /module is not loaded/ });
  t.match(f.eviction, { configPath: null, foundBy: null });
  t.equal(f.eviction.thresholds.length, 5, "kubelet's defaults");
  t.match(f.certificates[0], { present: false, error: 'absent' });
});

t.test('statfs: a call that never returns is reported, not waited for, and not made again', async (t) => {
  const guard = statfsGuard(2, 50);
  let calls = 0;
  const hung = { statfs: () => (calls++, new Promise<never>(() => {})) } as unknown as HostFs;
  const fine = { statfs: async () => ({ bsize: 4096 }) } as unknown as HostFs;
  t.match(await statfs(hung, '/mnt/nfs', guard), { ok: false, timedOut: true, outstanding: true, error: /did not return within 50 ms/ });
  t.match(await statfs(hung, '/mnt/nfs', guard), { ok: false, outstanding: true, error: /has not returned since/ });
  t.equal(calls, 1, 'one thread held, not one per request');
  t.match(await statfs(fine, '/', guard), { ok: true, value: { bsize: 4096 } });
  await statfs(hung, '/mnt/other', guard);
  t.match(await statfs(fine, '/var', guard), { ok: false, outstanding: false, error: /no free statfs slot/ }, 'two hung mounts hold both slots');
  t.same(mountAnswers(guard).map((m) => [m.path, m.answered]), [['/mnt/nfs', false], ['/', true], ['/mnt/other', false], ['/var', false]]);
  t.match(guard.readiness(), { ok: false, detail: /2 of 2 statfs calls stuck past 50 ms .*: \/mnt\/nfs, \/mnt\/other/ });
});

t.test('CRI latency: recent calls of the list methods only, bounded', async (t) => {
  const tr = new CriLatencyTracker(300, 4);
  for (let i = 0; i < 10; i++) tr.observe('ListContainers', 'OK', 0.01 * (i + 1), NOW - 1000 + i);
  tr.observe('ListPodSandbox', 'DEADLINE_EXCEEDED', 2.0, NOW);
  tr.observe('Version', 'OK', 9, NOW);
  const s = tr.snapshot(NOW);
  t.match(s.methods.find((m) => m.method === 'ListContainers'), { calls: 4, errors: 0, lastSeconds: 0.1, maxSeconds: 0.1 });
  t.match(s.methods.find((m) => m.method === 'ListPodSandbox'), { calls: 1, errors: 1, lastCode: 'DEADLINE_EXCEEDED' });
  t.equal(s.methods.length, 2);
  t.equal(tr.snapshot(NOW + 301_000).methods[0]!.calls, 0, 'old calls leave the window');
});

t.test('/etc/os-release: the distributions\' link to ../usr/lib/os-release is read; a FIFO there is unreadable, said, never "absent"', async (t) => {
  const fx = await factsHost('systemd');
  t.teardown(fx.cleanup);
  const { mkdirSync, rmSync, writeFileSync } = await import('node:fs');
  const { execFileSync } = await import('node:child_process');
  const etc = path.join(fx.root, 'etc/os-release');
  rmSync(etc, { force: true });
  mkdirSync(path.join(fx.root, 'usr/lib'), { recursive: true });
  writeFileSync(path.join(fx.root, 'usr/lib/os-release'), 'ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n');
  symlinkSync('../usr/lib/os-release', etc);
  const linked = await nodeFacts(new HostFs(fx.root), { nowMs: NOW });
  t.match(linked.nodeOs?.distribution, { id: 'debian', versionId: '12', source: '/etc/os-release' });

  rmSync(etc);
  execFileSync('mkfifo', [etc]);
  const warnings: string[] = [];
  const fifo = await nodeFacts(new HostFs(fx.root), { warnings, nowMs: NOW });
  t.match(fifo.nodeOs?.distribution, { id: null, source: /^\/etc\/os-release \(unreadable: .+\)$/ });
  t.ok(warnings.some((w) => /^\/etc\/os-release: unreadable \(.+\), the distribution is unknown$/.test(w)), warnings.join('\n'));
});
