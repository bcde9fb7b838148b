/**
 * Each triage rule on fixture evidence: typed snapshots built from the
 * captures (cgroup records read from the captured node's tree by the cgroup
 * source, OOM kills parsed from the captured kernel log by the OOM parser,
 * kubelet lines in klog format, CRI failures as grpc-js reports them).
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import type { Finding } from '../../src/model/triage.js';
import { CgroupSource } from '../../src/view/named-cgroups.js';
import { RuntimeIndexSource } from '../../src/view/runtime-index.js';
import { HostFs } from '../../src/readers/hostfs/hostfs.js';
import { splitKmsgText } from '../../src/readers/kmsg/parse.js';
import { attribute } from '../../src/view/oom.js';
import { parseOomReports } from '../../src/readers/oom/parse.js';
import { FINDINGS } from '../../src/triage/findings.js';
import { buildReport as reportOf, EXIT_CODES, renderText } from '../../src/triage/report.js';
import { type Rule, RULES, SnapshotIndex } from '../../src/triage/rules/index.js';
import type { TriageSnapshot } from '../../src/triage/snapshot.js';
import { JOURNAL_MATCH_PREFIX, KUBELET_JOURNAL_PATTERNS } from '../../src/rules/journal-patterns.js';
import { THRESHOLDS } from '../../src/rules/thresholds.js';
import { matchesJournalPattern } from '../../src/triage/rules/journal.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { factsHost, troubledFacts } from '../fixtures/node-facts.js';
import { GUARANTEED_ID, OOM_CHILD_ID, OOM_MAIN_ID, POD_UID, realNode, SANDBOX_ID, SPIN_ID } from '../fixtures/node-tree.js';
import { cniState, disk, failed, healthySnapshot, iso, kubeletLine, NOW, ok, row, sandbox } from '../fixtures/triage-snapshot.js';

/*
 * Every snapshot a test below judges is also run rule by rule against the catalogue
 * (src/triage/findings.ts): each finding's id must be catalogued under the rule that
 * emitted it, with that severity. The last test checks that nothing was off and that
 * every catalogued id and severity was emitted by some test: a rule, an id or a
 * severity added without its catalogue entry, or an entry without a test, fails.
 */
const CATALOGUE = new Map(FINDINGS.map((k) => [k.id, k]));
const offCatalogue: string[] = [];
const emitted = new Set<string>();
function judged(f: Finding, by: string): void {
  const k = CATALOGUE.get(f.id);
  if (!k || k.rule !== by || !k.severities.includes(f.severity)) offCatalogue.push(`${by} emitted ${f.id} (${f.severity}); catalogue: ${k ? `${k.rule}, ${k.severities.join('/')}` : 'none'}`);
  emitted.add(`${f.id} ${f.severity}`);
}
const buildReport = (s: TriageSnapshot, rules: readonly Rule[] = RULES) => {
  const ix = new SnapshotIndex(s);
  for (const rule of rules) {
    let out: Finding[] = [];
    try {
      out = rule.run(s, ix);
    } catch {
      continue; // the report says so (rule-failed), checked below
    }
    for (const f of out) judged(f, rule.name);
  }
  const r = reportOf(s, rules);
  // what the report adds of its own (a rule that threw) is catalogued under 'report'
  const own = r.findings.filter((f) => !rules.some((rule) => rule.ids.includes(f.id)));
  for (const f of own) judged(f, 'report');
  return r;
};
const findings = (s: TriageSnapshot) => buildReport(s).findings;
const ids = (fs: Finding[]) => fs.map((f) => f.id);

// the captured node's cgroups, read by the cgroup source (no runtime names)
const node = realNode('systemd');
t.teardown(() => node.cleanup());
const hostFs = new HostFs(node.root);
/** the records as the agent reads them, unnamed (no runtime) */
const records = async (fs: HostFs) => (await new CgroupSource(fs, new RuntimeIndexSource(null, 0)).records({ names: false })).items;
const CGROUPS = await records(hostFs);

// the two captured OOM kills, parsed from the kernel log; re-timed to 5 and 3 minutes ago
const KILLS = parseOomReports(
  splitKmsgText(readFileSync(kmsgFixture('oom-memcg-systemd.kmsg'), 'utf8')).map((r) => ({ text: r.text, monotonicUs: r.tsUsec, time: null, bootId: 'b', seq: r.seq, cursor: null })),
  'kmsg',
).map((k, i) => attribute({ ...k, time: iso(300 - i * 120) }));

const LAB = sandbox({ id: SANDBOX_ID, uid: POD_UID, name: 'lab' });
const labRow = (o: Parameters<typeof row>[0]) => row({ podName: 'lab', podNamespace: 'default', ...o });

t.test('the rule table: every id is documented once', async (t) => {
  const all = RULES.flatMap((r) => r.ids);
  t.equal(new Set(all).size, all.length);
  t.ok(all.length >= 20, `${all.length} finding ids`);
});

t.test('a healthy node: no findings, verdict ok, exit 0', async (t) => {
  const r = buildReport(healthySnapshot());
  t.same(r.findings, []);
  t.equal(r.verdict, 'ok');
  t.equal(EXIT_CODES[r.verdict], 0);
  t.match(renderText(r), /: OK \(0 critical, 0 warning, 0 info\)\n\nNo findings/);
});

t.test('runtime unreachable (socket missing): critical, with the call and the error', async (t) => {
  const s = healthySnapshot();
  s.runtime = failed('runtime unreachable at /run/containerd/containerd.sock: connect ENOENT /run/containerd/containerd.sock', 'runtime_unreachable');
  s.pods = failed('runtime unreachable at /run/containerd/containerd.sock: connect ENOENT /run/containerd/containerd.sock', 'runtime_unreachable');
  s.containers = failed('runtime unreachable at /run/containerd/containerd.sock: connect ENOENT /run/containerd/containerd.sock', 'runtime_unreachable');
  const f = findings(s);
  t.same(ids(f), ['runtime-unreachable'], 'pods/containers failing for the same reason are not extra findings');
  t.equal(f[0]!.severity, 'critical');
  t.match(f[0]!.evidence[0], { source: 'cri', call: 'Version, Status on unix:///run/containerd/containerd.sock', excerpt: /connect ENOENT/ });
  t.match(f[0]!.hint, /systemctl status containerd/);
  const r = buildReport(s);
  t.equal(r.verdict, 'critical');
  t.equal(EXIT_CODES[r.verdict], 2);
});

t.test('runtime not answering (deadline): a different finding and hint', async (t) => {
  const s = healthySnapshot();
  s.runtime = failed('runtime did not answer within 2s (Version on /run/containerd/containerd.sock)', 'runtime_timeout');
  const f = findings(s);
  t.equal(f[0]!.id, 'runtime-not-answering');
  t.match(f[0]!.hint, /wedged/);
});

t.test('no CRI socket at all', async (t) => {
  const s = healthySnapshot();
  s.criEndpoint = null;
  s.runtime = failed('no CRI socket configured or found under /host (looked for run/containerd/containerd.sock, run/crio/crio.sock); pass --cri-endpoint', 'runtime_unconfigured');
  const f = findings(s);
  t.equal(f[0]!.id, 'runtime-unreachable');
  t.match(f[0]!.hint, /No CRI socket was found/);
});

t.test('RuntimeReady false', async (t) => {
  const s = healthySnapshot();
  s.runtime = ok({ ...(s.runtime.ok ? s.runtime.value : (null as never)), status: { conditions: [{ type: 'RuntimeReady', status: false, reason: 'ContainerdNotReady', message: 'containerd is still starting' }, READY_NET], info: {}, runtimeHandlers: [] } });
  const f = findings(s);
  t.same(ids(f), ['runtime-not-ready']);
  t.match(f[0]!.evidence[0]!.excerpt, 'RuntimeReady=false reason=ContainerdNotReady message=containerd is still starting');
});
const READY_NET = { type: 'NetworkReady', status: true, reason: '', message: '' };

t.test('NetworkReady false, with the CNI state as evidence', async (t) => {
  const netDown = (s: TriageSnapshot) => {
    s.runtime = ok({
      version: { version: '0.1.0', runtimeName: 'containerd', runtimeVersion: '1.6.20~ds1', runtimeApiVersion: 'v1' },
      status: {
        conditions: [
          { type: 'RuntimeReady', status: true, reason: '', message: '' },
          { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' },
        ],
        info: {},
        runtimeHandlers: [],
      },
    });
    return s;
  };
  // no config written yet
  const a = netDown(healthySnapshot());
  a.cni = ok(cniState({ plugins: ['bridge', 'host-local', 'loopback', 'portmap'] }));
  const fa = findings(a);
  t.same(ids(fa), ['network-not-ready']);
  t.match(fa[0]!.detail, /cni plugin not initialized; no network configuration in \/etc\/cni\/net\.d/);
  t.match(fa[0]!.evidence, [{ source: 'cri' }, { source: 'file', path: '/etc/cni/net.d', excerpt: /no \*\.conf/ }, { source: 'file', path: '/opt/cni/bin', excerpt: 'plugins: bridge, host-local, loopback, portmap' }]);
  t.match(fa[0]!.hint, /daemonset has not written one/);
  // a config whose plugins are missing
  const b = netDown(healthySnapshot());
  b.cni = ok(
    cniState({
      confFiles: [{ name: '10-calico.conflist', path: '/etc/cni/net.d/10-calico.conflist', network: 'k8s-pod-network', plugins: ['calico', 'bandwidth', 'portmap'], error: null, excerpt: '{"name":"k8s-pod-network","cniVersion":"0.3.1","plugins":[{"type":"calico"},{"type":"bandwidth"},{"type":"portmap"}]}' }],
      plugins: ['bandwidth', 'portmap'],
      missingPlugins: ['calico'],
    }),
  );
  const fb = findings(b);
  t.match(fb[0]!.detail, /10-calico\.conflist uses calico, missing from \/opt\/cni\/bin/);
  t.match(fb[0]!.evidence[1], { source: 'file', path: '/etc/cni/net.d/10-calico.conflist', excerpt: /"type":"calico"/ });
  t.match(fb[0]!.hint, /Install the missing CNI plugins \(calico\)/);
  // a broken file
  const c = netDown(healthySnapshot());
  c.cni = ok(cniState({ confFiles: [{ name: '10-flannel.conflist', path: '/etc/cni/net.d/10-flannel.conflist', network: null, plugins: [], error: 'not JSON: Unexpected end of JSON input', excerpt: '{"name":"cbr0","plugins":[' }] }));
  t.match(findings(c)[0]!.detail, /no usable network configuration .*10-flannel\.conflist: not JSON/);
  t.match(findings(c)[0]!.evidence.at(-1), { path: '/opt/cni/bin', excerpt: 'no plugin binaries' });
  // CNI dirs unreadable: still the finding, saying so
  const d = netDown(healthySnapshot());
  d.cni = failed('EACCES');
  t.match(findings(d).map((f) => [f.id, f.evidence.at(-1)!.excerpt]), [['network-not-ready', 'CNI state unreadable: EACCES'], ['source-unavailable', 'EACCES']]);
});

t.test('kubelet healthz failing: unhealthy answer and no answer', async (t) => {
  const s = healthySnapshot();
  const h = s.host.ok ? s.host.value : (null as never);
  h.kubelet = { url: 'http://127.0.0.1:10248/healthz', reachable: true, ok: false, status: 500, body: '[+]ping ok\n[-]syncloop failed: reason withheld', durationMs: 3 };
  let f = findings(s);
  t.same(ids(f), ['kubelet-unhealthy']);
  t.match(f[0]!.evidence[0], { source: 'http', call: 'GET http://127.0.0.1:10248/healthz', excerpt: /HTTP 500: \[\+\]ping ok\n\[-\]syncloop failed/ });
  h.kubelet = { url: 'http://127.0.0.1:10248/healthz', reachable: false, ok: false, error: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:10248', durationMs: 1 };
  f = findings(s);
  t.match(f[0], { id: 'kubelet-unhealthy', severity: 'critical', title: /does not answer/ });
});

t.test('OOM kills from the kernel log, and the containerd race (Error/137 while the kernel shows the OOM kill)', async (t) => {
  t.equal(KILLS.length, 2, 'the two captured kills parse');
  const s = healthySnapshot();
  s.oom = ok({ kills: KILLS, warnings: [] });
  s.pods = ok([LAB]);
  s.containers = ok([
    labRow({ id: OOM_CHILD_ID, name: 'oom-child', podId: SANDBOX_ID, podUid: POD_UID, state: 'CONTAINER_RUNNING', reason: 'OOMKilled' }),
    labRow({ id: OOM_MAIN_ID, name: 'oom-main', podId: SANDBOX_ID, podUid: POD_UID, state: 'CONTAINER_EXITED', exitCode: 137, reason: 'Error', finishedAt: iso(180) }),
    labRow({ id: SPIN_ID, name: 'spin', podId: SANDBOX_ID, podUid: POD_UID }),
  ]);
  s.cgroups = ok(CGROUPS);
  const f = findings(s);
  t.same(ids(f).sort(), ['oom-kill', 'oom-kill', 'oom-kill-misreported']);
  const child = f.find((x) => x.subject?.container === 'oom-child')!;
  t.match(child, { id: 'oom-kill', severity: 'warning', subject: { namespace: 'default', pod: 'lab', podUid: POD_UID, containerId: OOM_CHILD_ID } });
  t.match(child.detail, /killed dd \(pid 916\) at its limit of 32MiB/);
  t.match(child.evidence[0], { source: 'kmsg', seq: 568, excerpt: /oom-kill:constraint=CONSTRAINT_MEMCG.*task=dd,pid=916[\s\S]*Killed process 916 \(dd\)/ });
  t.match(child.evidence.at(-1), { source: 'cgroup', path: /kubepods-burstable-pod7f3c2a10_1111_4222_8333_944455556666\.slice\/memory\.events$/, excerpt: 'max 50 oom 2 oom_kill 2' });
  const race = f.find((x) => x.id === 'oom-kill-misreported')!;
  t.match(race.title, /default\/lab container oom-main was OOM-killed, but the runtime reports reason "Error" with exit code 137/);
  t.match(race.evidence, [
    { source: 'cri', call: `ContainerStatus ${OOM_MAIN_ID}`, excerpt: /exitCode 137, reason "Error"/ },
    { source: 'kmsg', seq: 625, excerpt: /Killed process 938 \(dd\)/ },
  ]);
  // the same exit reported OOMKilled: no race finding
  const fixed = healthySnapshot();
  fixed.oom = s.oom;
  fixed.containers = ok([labRow({ id: OOM_MAIN_ID, name: 'oom-main', podId: SANDBOX_ID, podUid: POD_UID, state: 'CONTAINER_EXITED', exitCode: 137, reason: 'OOMKilled' })]);
  t.notOk(ids(findings(fixed)).includes('oom-kill-misreported'));
  // kills older than the window are not news
  const old = healthySnapshot();
  old.oom = ok({ kills: KILLS.map((k) => ({ ...k, time: iso(THRESHOLDS.oomWindowMinutes * 60 + 5) })), warnings: [] });
  t.same(findings(old), []);
});

t.test('an OOM kill only memory.events still shows: the running container whose child was killed', async (t) => {
  const s = healthySnapshot();
  s.cgroups = ok(CGROUPS);
  s.containers = ok([labRow({ id: OOM_CHILD_ID, name: 'oom-child', podId: SANDBOX_ID, podUid: POD_UID, state: 'CONTAINER_RUNNING', reason: 'OOMKilled' })]);
  const f = findings(s).filter((x) => x.id === 'oom-kill');
  t.equal(f.length, 1);
  t.match(f[0]!.detail, /memory\.events counts 1 OOM kill in this container's cgroup; the container kept running, so a child process was killed/);
  t.match(f[0]!.evidence[0], { source: 'cgroup', path: new RegExp(`cri-containerd-${OOM_CHILD_ID}\\.scope/memory\\.events$`), excerpt: 'max 32 oom 1 oom_kill 1' });
});

t.test('a global OOM (the node ran out) is critical', async (t) => {
  const text = readFileSync(kmsgFixture('oom-global.kmsg'), 'utf8');
  const kills = parseOomReports(splitKmsgText(text).map((r) => ({ text: r.text, monotonicUs: r.tsUsec, time: iso(60), bootId: 'b', seq: r.seq, cursor: null })), 'kmsg').map(attribute);
  t.ok(kills.length >= 1 && kills.every((k) => k.global));
  const s = healthySnapshot();
  s.oom = ok({ kills, warnings: [] });
  const f = findings(s);
  t.match(f[0], { id: 'oom-kill-node', severity: 'critical' });
});

t.test('crash loop: attempt ≥ 3 and a non-zero last exit', async (t) => {
  const pod = sandbox({ id: 'a'.repeat(64), uid: '11111111-1111-4111-8111-111111111111', name: 'web-0', namespace: 'shop' });
  const attempts = (n: number, exit: number, lastState: 'CONTAINER_RUNNING' | 'CONTAINER_EXITED') =>
    Array.from({ length: n + 1 }, (_, a) =>
      row({
        id: `c0ffee0${a}`.padEnd(64, 'a'),
        name: 'app',
        podId: pod.id,
        podUid: pod.uid,
        attempt: a,
        state: a === n ? lastState : 'CONTAINER_EXITED',
        exitCode: a === n && lastState === 'CONTAINER_RUNNING' ? 0 : exit,
        reason: a === n && lastState === 'CONTAINER_RUNNING' ? '' : 'Error',
        finishedAt: a === n && lastState === 'CONTAINER_RUNNING' ? null : iso(300 - a * 60),
      }),
    );
  const s = healthySnapshot();
  s.pods = ok([pod]);
  s.containers = ok(attempts(3, 1, 'CONTAINER_RUNNING'));
  const f = findings(s);
  t.same(ids(f), ['crash-loop']);
  t.match(f[0], { severity: 'warning', title: 'shop/web-0 container app is crash-looping', subject: { podUid: pod.uid, container: 'app' } });
  t.match(f[0]!.detail, /attempt 3 \(running\); its last run \(attempt 2\) exited with code 1 \(Error\)/);
  t.match(f[0]!.evidence[0], { source: 'cri', call: `ContainerStatus ${'c0ffee02'.padEnd(64, 'a')}`, excerpt: /attempt 2, state CONTAINER_EXITED, exitCode 1/ });
  t.match(f[0]!.hint, /GET \/v1\/containers\/c0ffee02aaaaa\/logs/);
  s.containers = ok(attempts(2, 1, 'CONTAINER_EXITED'));
  t.same(findings(s), [], 'attempt 2 is not a loop yet');
  s.containers = ok(attempts(4, 0, 'CONTAINER_EXITED'));
  t.same(findings(s), [], 'exit 0 restarts (a job) are not a crash loop');
});

t.test('CPU throttling over the window, from the captured cpu.stat delta', async (t) => {
  // shared/captures/node-vm/cpu-throttling-cpu-stat.txt: 3 s apart, nr_periods 169→200, nr_throttled 168→199
  const spin = CGROUPS.find((c) => c.containerId === SPIN_ID)!;
  const { dir: _d, ...cg } = { ...spin, dir: null };
  const s = healthySnapshot();
  s.throttling = ok({
    windowMs: 3000,
    entries: [
      { kind: 'container', path: spin.path, driver: 'systemd', qos: 'burstable', podUid: POD_UID, containerId: SPIN_ID, runtime: 'cri-containerd', periods: 31, throttledPeriods: 31, throttledShare: 1, throttledSeconds: 2.782689, usageCores: 0.0998, cpuMax: { quotaUsec: 10000, periodUsec: 100000, quotaCores: 0.1 } },
      { kind: 'container', path: '/x', driver: 'systemd', qos: 'guaranteed', podUid: 'p', containerId: GUARANTEED_ID, runtime: 'cri-containerd', periods: 30, throttledPeriods: 7, throttledShare: 0.2333, throttledSeconds: 0.1, usageCores: 0.4, cpuMax: null },
    ],
  });
  void cg;
  s.containers = ok([labRow({ id: SPIN_ID, name: 'spin', podId: SANDBOX_ID, podUid: POD_UID })]);
  const f = findings(s);
  t.same(ids(f), ['cpu-throttling'], '23% is under the 25% threshold');
  t.match(f[0]!.title, 'default/lab container spin is CPU-throttled in 100.0% of periods');
  t.match(f[0]!.detail, /31 of 31 CFS periods throttled, 2\.782689 s throttled, using 0\.0998 cores against a quota of 0\.1 cores \(cpu\.max 10000 100000\)/);
  t.match(f[0]!.evidence[0], { source: 'cgroup', path: `/sys/fs/cgroup${spin.path}/cpu.stat`, excerpt: 'nr_periods +31 nr_throttled +31 throttled_usec +2782689 over 3000 ms' });
});

t.test('working set above 90% of memory.max (fixture tree)', async (t) => {
  const { realNodeSpec, tempHostRoot } = await import('../fixtures/node-tree.js');
  const spec = realNodeSpec();
  const db = spec.pods.find((p) => p.name === 'db')!;
  const c = db.containers.find((x) => x.id === GUARANTEED_ID)!;
  // 256 MiB limit; 250 MiB current, 5 MiB inactive file: working set 245 MiB = 95.7%
  c.files = { ...c.files, 'memory.current': `${250 * 2 ** 20}\n`, 'memory.stat': (await import('../fixtures/node-tree.js')).memoryStat({ anon: 240 * 2 ** 20, file: 10 * 2 ** 20, inactiveFile: 5 * 2 ** 20 }) };
  const tree = tempHostRoot(spec);
  t.teardown(() => tree.cleanup());
  const fs = new HostFs(tree.root);
  const s = healthySnapshot();
  s.cgroups = ok(await records(fs));
  const f = findings(s).filter((x) => x.id !== 'oom-kill'); // the captured oom-child's memory.events
  t.same(ids(f), ['memory-near-limit']);
  t.match(f[0]!.title, /uses 95\.7% of its memory limit/);
  t.match(f[0]!.detail, /working set 245MiB of memory\.max 256MiB/);
  t.match(f[0]!.evidence[1], { source: 'cgroup', path: new RegExp(`cri-containerd-${GUARANTEED_ID}\\.scope/memory\\.max$`), excerpt: '268435456' });
  // the captured node itself is nowhere near its limits
  const captured = healthySnapshot();
  captured.cgroups = ok(CGROUPS);
  t.notOk(ids(findings(captured)).includes('memory-near-limit'));
});

t.test('memory.high reclaim throttling without an OOM kill (fixture tree)', async (t) => {
  const { memoryStat, psi, realNodeSpec, tempHostRoot } = await import('../fixtures/node-tree.js');
  // The spin container under kubelet's MemoryQoS: no request, a 64Mi limit, memoryThrottlingFactor
  // 0.9: 0 + 0.9 × 64Mi floored to whole pages is memory.high 60395520; a hog holds memory.current just over it
  // (anon, no swap: reclaim cannot bring it back under, so the kernel makes it sleep).
  // Files in the kernel's formats (memory.events and PSI as captured); the values are made up.
  const hog = (o: { pressure?: string | null; events?: string; stat?: string; high?: string } = {}) => {
    const spec = realNodeSpec();
    const c = spec.pods[0]!.containers.find((x) => x.id === SPIN_ID)!;
    c.files = {
      ...c.files,
      'memory.high': o.high ?? '60395520\n',
      'memory.current': '60461056\n',
      'memory.events': o.events ?? 'low 0\nhigh 1432\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n',
      'memory.events.local': o.events ?? 'low 0\nhigh 1432\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n',
      'memory.pressure': o.pressure === undefined ? 'some avg10=62.47 avg60=31.05 avg300=7.92 total=9120433\nfull avg10=61.90 avg60=30.66 avg300=7.81 total=9010217\n' : o.pressure,
      'memory.stat': o.stat ?? memoryStat({ anon: 58 * 2 ** 20, file: 2 ** 20, inactiveFile: 2 ** 19 }),
    };
    return spec;
  };
  const judge = async (spec: ReturnType<typeof realNodeSpec>) => {
    const tree = tempHostRoot(spec);
    t.teardown(() => tree.cleanup());
    const s = healthySnapshot();
    s.cgroups = ok(await records(new HostFs(tree.root)));
    s.containers = ok([labRow({ id: SPIN_ID, name: 'spin', podId: SANDBOX_ID, podUid: POD_UID })]);
    return findings(s).filter((x) => x.id.startsWith('memory-'));
  };

  const f = await judge(hog());
  t.same(ids(f), ['memory-high-reclaim'], 'under memory.max (89% working set): only memory.high holds it');
  t.equal(f[0]!.severity, 'warning');
  t.equal(f[0]!.title, 'default/lab container spin is throttled at memory.high (57.6MiB)');
  t.match(f[0]!.detail, /^memory\.current 57\.7MiB is 100\.1% of memory\.high 57\.6MiB; memory\.events counts 1432 high events .*stalled on memory 62\.47% of the last 10 s .*no OOM kill.*memory\.max is 64MiB$/);
  t.match(f[0]!.subject, { namespace: 'default', pod: 'lab', container: 'spin', containerId: SPIN_ID });
  const scope = `/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7f3c2a10_1111_4222_8333_944455556666.slice/cri-containerd-${SPIN_ID}.scope`;
  t.same(f[0]!.evidence, [
    { source: 'cgroup', path: `${scope}/memory.high`, excerpt: '60395520' },
    { source: 'cgroup', path: `${scope}/memory.current`, excerpt: '60461056' },
    { source: 'cgroup', path: `${scope}/memory.events`, excerpt: 'high 1432' },
    { source: 'cgroup', path: `${scope}/memory.pressure`, excerpt: 'some avg10=62.47 avg60=31.05 avg300=7.92 total=9120433' },
  ]);
  t.match(f[0]!.hint, /MemoryQoS.*memoryThrottlingFactor.*\/v1\/containers\/af592112a1e08\/processes/);

  // page cache reclaimed for free at memory.high: high events, no stall
  t.same(ids(await judge(hog({ pressure: psi(0.4, 81234) }))), [], 'no memory stall: not throttling that hurts');
  t.same(ids(await judge(hog({ high: 'max\n' }))), [], 'memory.high not set');
  t.same(ids(await judge(hog({ events: 'low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n' }))), [], 'never went over memory.high');
  t.same(ids(await judge(hog({ events: 'low 0\nhigh 1432\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n' }))), [], 'OOM-killed: the oom rule reports it');
  // a kernel without PSI (psi=0): the working set at memory.high stands in; page cache alone does not count
  const noPsi = await judge(hog({ pressure: null }));
  t.same(ids(noPsi), ['memory-high-reclaim']);
  t.match(noPsi[0]!.detail, /working set 57\.2MiB \(no memory\.pressure/);
  t.match(noPsi[0]!.evidence[3], { path: `${scope}/memory.stat`, excerpt: 'inactive_file 524288' });
  t.same(ids(await judge(hog({ pressure: null, stat: memoryStat({ anon: 8 * 2 ** 20, file: 50 * 2 ** 20, inactiveFile: 40 * 2 ** 20 }) }))), [], 'no PSI and mostly inactive cache: not judged throttled');
  // a pod with its own memory.high is judged on its own events (memory.events.local), not its containers'
  const podSpec = realNodeSpec();
  const lab = podSpec.pods[0]!;
  lab.files = { ...lab.files, 'memory.high': '1048576\n', 'memory.current': '1048576\n', 'memory.events.local': 'low 0\nhigh 7\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n', 'memory.events': 'low 0\nhigh 7\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n', 'memory.pressure': psi(25, 500000) };
  const pf = await judge(podSpec);
  t.same(ids(pf), ['memory-high-reclaim']);
  t.match(pf[0]!.subject, { podUid: POD_UID });
  t.notOk(pf[0]!.subject!.containerId);
  t.match(pf[0]!.evidence[2], { path: /pod7f3c2a10_1111_4222_8333_944455556666\.slice\/memory\.events\.local$/, excerpt: 'high 7' });
  t.match(pf[0]!.hint, `/v1/cgroups/${POD_UID}`);
  // the captured node: memory.high is max everywhere
  const captured = healthySnapshot();
  captured.cgroups = ok(CGROUPS);
  t.notOk(ids(findings(captured)).includes('memory-high-reclaim'));
});

t.test("disk pressure at kubelet's eviction defaults", async (t) => {
  const s = healthySnapshot();
  const h = s.host.ok ? s.host.value : (null as never);
  h.disks = [disk('/', 0.5), disk('/var/lib/containerd', 0.17, 0.5, 200 * 2 ** 30), disk('/var/lib/kubelet', 0.08, 0.03, 50 * 2 ** 30)];
  const f = findings(s);
  t.same(
    f.map((x) => [x.severity, x.title]),
    [
      ['critical', "nodefs.available below kubelet's eviction threshold on /var/lib/kubelet"],
      ['critical', "nodefs.inodesFree below kubelet's eviction threshold on /var/lib/kubelet"],
      ['warning', "imagefs.available close to kubelet's eviction threshold on /var/lib/containerd"],
    ],
  );
  t.match(f[0]!.detail, /8\.0% available .* \(kubelet evicts pods below 10\.0%: nodefs\.available<10%\)/);
  t.match(f[0]!.evidence[0], { source: 'statfs', path: '/var/lib/kubelet' });
  // one filesystem for everything: each signal once, with the stricter imagefs threshold
  h.disks = [disk('/', 0.12), { ...disk('/var/lib/containerd', 0), present: false }, { ...disk('/var/lib/kubelet', 0), present: false }];
  t.same(
    findings(s).map((x) => [x.severity, x.title]),
    [['warning', "nodefs.available close to kubelet's eviction threshold on /"]],
    'nodefs 12% is a warning; imagefs on the same fs is not repeated',
  );
});

t.test('PID pressure and node memory pressure', async (t) => {
  const s = healthySnapshot();
  const h = s.host.ok ? s.host.value : (null as never);
  h.pids = { processes: 3000, threads: 32_000, pidMax: 32_768, threadsMax: 63_000, pidRatio: 32_000 / 32_768, threadsRatio: 0.5 };
  h.memory = { totalBytes: 2 * 2 ** 30, availableBytes: 80 * 2 ** 20, availableRatio: 0.039 };
  const f = findings(s);
  t.same(ids(f).sort(), ['memory-pressure', 'pid-pressure']);
  t.match(f.find((x) => x.id === 'pid-pressure'), { severity: 'critical', title: '97.7% of the node\'s PIDs are in use', evidence: [{ path: '/proc/loadavg' }, { path: '/proc/sys/kernel/pid_max', excerpt: '32768' }] });
  h.pids.pidRatio = 0.85;
  h.memory.availableBytes = 2 ** 30;
  t.match(findings(s), [{ id: 'pid-pressure', severity: 'warning' }]);
});

t.test('sandboxes NOTREADY with no running container; containers stuck in CREATED', async (t) => {
  const broken = sandbox({ id: 'b'.repeat(64), uid: '22222222-2222-4222-8222-222222222222', name: 'api-1', namespace: 'shop', state: 'SANDBOX_NOTREADY', attempt: 3, createdAt: iso(120) });
  const olderTry = sandbox({ id: 'c'.repeat(64), uid: broken.uid, name: 'api-1', namespace: 'shop', state: 'SANDBOX_NOTREADY', attempt: 2, createdAt: iso(400) });
  const done = sandbox({ id: 'd'.repeat(64), uid: '33333333-3333-4333-8333-333333333333', name: 'job-1', namespace: 'batch', state: 'SANDBOX_NOTREADY', createdAt: iso(900) });
  const fresh = sandbox({ id: 'e'.repeat(64), uid: '44444444-4444-4444-8444-444444444444', name: 'new-1', state: 'SANDBOX_NOTREADY', createdAt: iso(5) });
  const s = healthySnapshot();
  s.pods = ok([broken, olderTry, done, fresh, LAB]);
  s.containers = ok([
    row({ id: 'f'.repeat(64), name: 'main', podId: done.id, podUid: done.uid, podName: 'job-1', podNamespace: 'batch', state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed' }),
    labRow({ id: SPIN_ID, name: 'spin', podId: SANDBOX_ID, podUid: POD_UID, state: 'CONTAINER_CREATED', createdAt: iso(300), startedAt: null }),
    labRow({ id: OOM_CHILD_ID, name: 'oom-child', podId: SANDBOX_ID, podUid: POD_UID, state: 'CONTAINER_CREATED', createdAt: iso(10), startedAt: null }),
  ]);
  const f = findings(s);
  t.same(ids(f), ['sandbox-not-ready', 'container-stuck-created'], 'the completed job and the 5 s old sandbox are fine; the 10 s old CREATED one too');
  t.match(f[0], { title: 'shop/api-1 has no ready sandbox and no running container', subject: { podUid: broken.uid } });
  t.match(f[0]!.detail, /2 sandboxes, all NOTREADY; the newest \(bbbbbbbbbbbbb, attempt 3\) was created 120 s ago; no containers were created in it/);
  t.match(f[0]!.evidence[0], { source: 'cri', call: 'ListPodSandbox', excerpt: /bbbb.* SANDBOX_NOTREADY attempt 3[\s\S]*cccc.* SANDBOX_NOTREADY attempt 2/ });
  t.match(f[1], { title: 'default/lab container spin was created 300 s ago and never started', evidence: [{ source: 'cri', call: `ContainerStatus ${SPIN_ID}` }] });
});

t.test('a finished pod (all containers exited, any exit code) is not a sandbox kubelet fails to make', async (t) => {
  // restartPolicy Never, its one container OOM-killed: kubelet stopped the sandbox and will make no other
  const victim = sandbox({ id: '1'.repeat(64), uid: '55555555-5555-4555-8555-555555555555', name: 'oom-victim', state: 'SANDBOX_NOTREADY', createdAt: iso(900) });
  // two containers, one failed, one succeeded: finished as well
  const mixed = sandbox({ id: '2'.repeat(64), uid: '66666666-6666-4666-8666-666666666666', name: 'job-2', namespace: 'batch', state: 'SANDBOX_NOTREADY', createdAt: iso(900) });
  // a pod kubelet tries to run again: its old sandbox's container exited, the new sandbox has none
  const old = sandbox({ id: '3'.repeat(64), uid: '77777777-7777-4777-8777-777777777777', name: 'web-1', namespace: 'shop', state: 'SANDBOX_NOTREADY', attempt: 0, createdAt: iso(900) });
  const retry = sandbox({ id: '4'.repeat(64), uid: old.uid, name: 'web-1', namespace: 'shop', state: 'SANDBOX_NOTREADY', attempt: 1, createdAt: iso(120) });
  // a container the runtime cannot tell the state of: not known to have finished
  const unknown = sandbox({ id: '5'.repeat(64), uid: '88888888-8888-4888-8888-888888888888', name: 'odd-1', state: 'SANDBOX_NOTREADY', createdAt: iso(900) });
  const s = healthySnapshot();
  s.pods = ok([victim, mixed, old, retry, unknown]);
  s.containers = ok([
    row({ id: 'a1'.repeat(32), name: 'hog', podId: victim.id, podUid: victim.uid, podName: 'oom-victim', podNamespace: 'default', state: 'CONTAINER_EXITED', exitCode: 137, reason: 'OOMKilled', finishedAt: iso(880) }),
    row({ id: 'a2'.repeat(32), name: 'load', podId: mixed.id, podUid: mixed.uid, podName: 'job-2', podNamespace: 'batch', state: 'CONTAINER_EXITED', exitCode: 1, reason: 'Error', finishedAt: iso(880) }),
    row({ id: 'a3'.repeat(32), name: 'report', podId: mixed.id, podUid: mixed.uid, podName: 'job-2', podNamespace: 'batch', state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed', finishedAt: iso(870) }),
    row({ id: 'a4'.repeat(32), name: 'web', podId: old.id, podUid: old.uid, podName: 'web-1', podNamespace: 'shop', state: 'CONTAINER_EXITED', exitCode: 137, reason: 'Error', finishedAt: iso(150) }),
    row({ id: 'a5'.repeat(32), name: 'odd', podId: unknown.id, podUid: unknown.uid, podName: 'odd-1', podNamespace: 'default', state: 'CONTAINER_UNKNOWN', exitCode: null, reason: null }),
  ]);
  const f = findings(s).filter((x) => x.id === 'sandbox-not-ready');
  t.same(f.map((x) => x.subject?.podUid).sort(), [old.uid, unknown.uid].sort(), 'the OOM-killed Never pod and the finished job are not reported');
  t.match(f.find((x) => x.subject?.podUid === old.uid), { title: 'shop/web-1 has no ready sandbox and no running container', detail: /2 sandboxes, all NOTREADY; the newest \(4444444444444, attempt 1\)/ });
});

/** kubelet's journal source answering these records, whole */
const journalOf = (records: ReturnType<typeof kubeletLine>[]) => ok({ records, truncated: null, warnings: [] });

t.test('kubelet journal errors of the last 10 minutes, by kind, with cursors', async (t) => {
  const s = healthySnapshot();
  s.kubeletJournal = journalOf([
    kubeletLine(900, 'E', 'pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \\"StartContainer\\" for \\"app\\" with ErrImagePull: \\"rpc error: code = NotFound\\"" pod="shop/old"'),
    kubeletLine(420, 'E', 'log.go:32] "PullImage from image service failed" err="rpc error: code = NotFound desc = failed to pull and unpack image \\"docker.io/library/nginx:1.99\\": failed to resolve reference \\"docker.io/library/nginx:1.99\\": docker.io/library/nginx:1.99: not found" image="nginx:1.99"'),
    kubeletLine(410, 'E', 'pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \\"StartContainer\\" for \\"web\\" with ErrImagePull: \\"failed to pull and unpack image\\"" pod="shop/web-0" podUID="11111111-1111-4111-8111-111111111111"'),
    kubeletLine(400, 'I', 'kuberuntime_manager.go:1050] "Back-off pulling image" image="nginx:1.99" ErrImagePull informational'),
    kubeletLine(300, 'E', 'log.go:32] "RunPodSandbox from runtime service failed" err="rpc error: code = Unknown desc = failed to setup network for sandbox \\"5a1b\\": plugin type=\\"calico\\" failed (add): stat /var/lib/calico/nodename: no such file or directory"'),
    kubeletLine(200, 'E', 'kubelet.go:2412] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0.5s ago; threshold is 3m0s"'),
    kubeletLine(100, 'E', 'kubelet.go:2862] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"'),
    kubeletLine(60, 'E', 'remote_runtime.go:633] "Status from runtime service failed" err="rpc error: code = Unavailable desc = connection error: desc = \\"transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: no such file or directory\\""'),
    kubeletLine(30, 'I', 'kubelet.go:2412] "SyncLoop (PLEG): event for pod" pod="default/web-3"'),
  ]);
  const f = findings(s);
  t.same(ids(f).sort(), ['kubelet-image-pull-errors', 'kubelet-pleg-unhealthy', 'kubelet-runtime-not-ready', 'kubelet-sandbox-network-errors']);
  const pull = f.find((x) => x.id === 'kubelet-image-pull-errors')!;
  t.match(pull.detail, /^2 kubelet log lines in the last 10 minutes/, 'the 15-minute-old line and the I line do not count');
  t.match(pull.evidence[0], { source: 'journal', cursor: /^s=0a1b2c3d4e5f;i=/, excerpt: /failed to pull and unpack image/ });
  t.match(f.find((x) => x.id === 'kubelet-sandbox-network-errors')!.evidence.map((e) => e.excerpt), [/failed to setup network for sandbox/, /cni plugin not initialized/]);
  t.equal(f.find((x) => x.id === 'kubelet-pleg-unhealthy')!.severity, 'critical');
  t.equal(KUBELET_JOURNAL_PATTERNS.length, 5);
});

t.test("kubelet's start: its 'not yet' lines count only when one kubelet process logs them past a minute", async (t) => {
  // kubelet 1.36.0 at a start on the dev cluster's node (2026-12-04, pid 555: 00:55:16.899 to 00:55:18.470)
  const skipping = 'kubelet.go:2646] "Skipping pod synchronization" err=';
  const both = `${skipping}"[container runtime status check may not have completed yet, PLEG is not healthy: pleg has yet to be successful]"`;
  const runtime = `${skipping}"container runtime status check may not have completed yet"`;
  const at = (secondsAgo: number, text: string, pid: number) => ({ ...kubeletLine(secondsAgo, 'E', text), pid });
  const start = (from: number, pid: number) => [at(from, both, pid), at(from - 0.1, runtime, pid), at(from - 0.4, runtime, pid), at(from - 0.8, runtime, pid), at(from - 1.6, runtime, pid)];
  const s = healthySnapshot();
  // three restarts of kubelet in the window, each over in under 2 s
  s.kubeletJournal = journalOf([...start(500, 555), ...start(300, 1083), ...start(100, 1242)]);
  t.same(ids(findings(s)).filter((id) => id.startsWith('kubelet-')), [], 'a kubelet starting is not a sick one');
  // one kubelet whose runtime never answered: the same line every 5 s (its back-off's most) for 2 minutes
  s.kubeletJournal = journalOf([...start(500, 555), ...Array.from({ length: 25 }, (_, i) => at(200 - i * 5, both, 4242))]);
  let f = findings(s);
  t.same(ids(f), ['kubelet-pleg-unhealthy']);
  t.match(f[0]!.detail, /^25 kubelet log lines in the last 10 minutes/, "only the stuck process's lines");
  // its PLEG relisted once, its runtime status check never came
  s.kubeletJournal = journalOf(Array.from({ length: 25 }, (_, i) => at(200 - i * 5, runtime, 4242)));
  f = findings(s);
  t.same(ids(f), ['kubelet-runtime-not-ready']);
  // a real PLEG failure counts at once, whatever the process
  s.kubeletJournal = journalOf([at(30, `${skipping}"PLEG is not healthy: pleg was last seen active 3m5.2s ago; threshold is 3m0s"`, 555)]);
  t.same(ids(findings(s)), ['kubelet-pleg-unhealthy']);
});

t.test('kubelet refused by the API server (401): its real lines, not a registry 401', async (t) => {
  const s = healthySnapshot();
  // kubelet 1.36.0 on the dev cluster's node with an expired client certificate
  // (scripts/dev-cluster.sh cert-check, 2026-12-04), klog headers as journald stores them
  s.kubeletJournal = journalOf([
    kubeletLine(50, 'E', 'reflector.go:227] "Failed to watch" err="failed to list *v1.Node: Unauthorized" logger="UnhandledError" reflector="k8s.io/client-go@v0.0.0/tools/cache/reflector.go:343" type="*v1.Node"'),
    kubeletLine(45, 'E', 'controller.go:201] "Failed to ensure lease exists, will retry" err="Unauthorized" interval="200ms"'),
    kubeletLine(40, 'E', 'webhook.go:266] Failed to make webhook authorizer request: Unauthorized'),
    kubeletLine(39, 'E', 'server.go:394] "Authorization error" err="Unauthorized" user="kube-apiserver-kubelet-client" verb="get" resource="nodes" subresource="proxy"'),
    // a registry's 401 as containerd words it (remotes/docker/resolver.go: "unexpected status
    // from %s request to %s: %s", the HTTP status line): an image pull error, not this finding
    kubeletLine(30, 'E', 'log.go:32] "PullImage from image service failed" err="rpc error: code = Unknown desc = failed to pull and unpack image \\"registry.example/app:1\\": failed to resolve reference \\"registry.example/app:1\\": unexpected status from HEAD request to https://registry.example/v2/app/manifests/1: 401 Unauthorized" image="registry.example/app:1"'),
  ]);
  const f = findings(s);
  t.same(ids(f).sort(), ['kubelet-api-unauthorized', 'kubelet-image-pull-errors']);
  const u = f.find((x) => x.id === 'kubelet-api-unauthorized')!;
  t.equal(u.severity, 'critical');
  t.equal(u.title, 'The API server refuses kubelet (401 Unauthorized)');
  t.match(u.detail, /^4 kubelet log lines in the last 10 minutes/, 'the four refused calls, not the pull');
  t.match(u.evidence[0], { source: 'journal', excerpt: /Unauthorized/ });
});

t.test('kubelet journal phrases: hostile lines are matched in one pass, and only where the regexes matched', async (t) => {
  const pleg = KUBELET_JOURNAL_PATTERNS.find((p) => p.id === 'kubelet-pleg-unhealthy')!;
  const net = KUBELET_JOURNAL_PATTERNS.find((p) => p.id === 'kubelet-sandbox-network-errors')!;
  // shapes that make backtracking regexes slow (PLEG.*relist: 18 s over 20,000 such lines)
  t.equal(matchesJournalPattern(pleg, 'PLEG'.repeat(12_000)), false);
  t.equal(matchesJournalPattern(net, 'failed to set up sandbox container '.repeat(1400)), false);
  t.equal(matchesJournalPattern(net, 'plugin type="'.repeat(4000)), false);
  // real kubelet 1.30 lines
  t.equal(matchesJournalPattern(pleg, 'kubelet.go:2412] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m5s ago; threshold is 3m0s"'), true);
  t.equal(matchesJournalPattern(pleg, 'generic.go:224] "GenericPLEG: Unable to retrieve pods" err="rpc error: code = DeadlineExceeded desc = context deadline exceeded" relist'), true);
  t.equal(matchesJournalPattern(pleg, 'relist before PLEG'), false, 'in order, as PLEG.*relist');
  t.equal(matchesJournalPattern(net, 'pod_workers.go:1298] "Error syncing pod" err="failed to \"CreatePodSandbox\": rpc error: code = Unknown desc = failed to setup network for sandbox \"9f1c\": plugin type=\"calico\" failed (add): error getting ClusterInformation"'), true);
  t.equal(matchesJournalPattern(net, `${'x'.repeat(JOURNAL_MATCH_PREFIX)} cni plugin not initialized`), false, 'only the first KiB is searched');
});

t.test('a failing source is a finding, not a crash; the other rules still run', async (t) => {
  const s = healthySnapshot();
  s.cgroups = failed('cgroup v1: /sys/fs/cgroup is tmpfs with per-controller hierarchies; nodetruth reads cgroup v2 only (boot with systemd.unified_cgroup_hierarchy=1)', 'cgroup_mode_unsupported');
  s.throttling = failed('cgroup v1: /sys/fs/cgroup is tmpfs with per-controller hierarchies; nodetruth reads cgroup v2 only (boot with systemd.unified_cgroup_hierarchy=1)', 'cgroup_mode_unsupported');
  s.kubeletJournal = failed('no journalctl found: neither on the host nor bundled');
  s.oom = failed('kernel log unreadable: kmsg: cannot open the kernel log /host/dev/kmsg: EACCES');
  s.host = failed('node health: no answer within 3000 ms', 'source_timeout');
  s.containers = ok([row({ id: 'c'.repeat(64), name: 'x', podId: 'p', podUid: 'u', state: 'CONTAINER_CREATED', createdAt: iso(3600) })]);
  const r = buildReport(s);
  t.same(r.findings.map((f) => [f.id, f.severity]), [
    ['container-stuck-created', 'warning'],
    ['source-unavailable', 'warning'],
    ['source-unavailable', 'warning'],
    ['source-unavailable', 'info'],
    ['source-unavailable', 'info'],
  ]);
  t.match(r.findings[1]!.detail, /cgroup v1/);
  t.equal(r.verdict, 'warning');
  t.equal(EXIT_CODES.warning, 1);
  t.same(r.sources.cgroups, { ok: false, durationMs: 1, error: s.cgroups.ok ? '' : s.cgroups.error });
  t.equal(r.sources.runtime!.ok, true);
  const text = renderText(r);
  t.match(text, /: WARNING \(0 critical, 3 warning, 2 info\)/);
  t.match(text, /sources that did not answer: cgroups, throttling, host, oom, kubeletJournal/);
});

t.test('the text report: severity, title, id, detail, evidence, next step', async (t) => {
  const s = healthySnapshot();
  s.runtime = failed('runtime unreachable at /run/containerd/containerd.sock: connect ENOENT /run/containerd/containerd.sock', 'runtime_unreachable');
  const text = renderText(buildReport(s));
  t.match(text, /^nodetruth triage of node-a at 2026-11-29T19:45:00\.000Z: CRITICAL \(1 critical, 0 warning, 0 info\)\n/);
  t.match(text, /\nCRITICAL The container runtime is unreachable  \[runtime-unreachable\]\n {9}runtime unreachable at .*\n {9}cri Version, Status on unix:\/\/\/run\/containerd\/containerd.sock:\n {11}runtime unreachable .*\n {9}→ Nothing answers on the CRI socket/);
  t.notMatch(text, /\x1b\[/, 'no colour unless asked');
  t.match(renderText(buildReport(s), { color: true }), /\x1b\[1;31mCRITICAL/);
  void NOW;
});

t.test('a rule that throws on data no one foresaw is a finding; the other rules still run', async (t) => {
  const s = healthySnapshot();
  const h = s.host.ok ? s.host.value : (null as never);
  h.memory = { totalBytes: 2 * 2 ** 30, availableBytes: 80 * 2 ** 20, availableRatio: 0.039 };
  const broken: Rule = { ...RULES.find((r) => r.name === 'crash-loop')!, run: () => [][0]!['attempt' as never] };
  const r = buildReport(s, RULES.map((x) => (x.name === 'crash-loop' ? broken : x)));
  t.same(r.findings.map((f) => [f.id, f.severity]), [['memory-pressure', 'critical'], ['rule-failed', 'warning']]);
  t.match(r.findings[1]!.title, /crash-loop/);
});

t.test('node facts: each row from a real-shaped host (test/triage/node-facts.test.ts checks each finding)', async (t) => {
  const fx = await factsHost('systemd');
  t.teardown(fx.cleanup);
  const f = await troubledFacts(fx);
  const s = { ...healthySnapshot(), facts: ok(f) };
  t.equal(findings(s).filter((f) => f.id === 'eviction-threshold-crossed').length, 2, 'hard and soft');
  // the other severities: a table 90% full, three D-state processes, a list call past PLEG's 3 minutes
  const more = { ...healthySnapshot(), facts: ok({ ...f, conntrack: { loaded: true as const, entries: 236_000, limit: 262_144, ratio: 0.9, hostNetwork: true }, processes: { ...f.processes, dState: 3 }, criLatency: { windowSeconds: 300, methods: f.criLatency.methods.map((m) => ({ ...m, maxSeconds: 181 })) } }) };
  t.ok(['conntrack-table-full warning', 'processes-d-state warning', 'runtime-slow critical'].every((x) => findings(more).some((y) => `${y.id} ${y.severity}` === x)));
});

t.test('every finding above is in the catalogue under the rule that emitted it, and every catalogued one was emitted', async (t) => {
  t.same(offCatalogue, [], 'findings.ts lists each emitted id under its rule with that severity');
  // the kernel rule's entries are emitted and checked the same way in test/triage/kernel.test.ts (its own fixtures)
  const wanted = FINDINGS.filter((k) => k.rule !== 'kernel').flatMap((k) => k.severities.map((sev) => `${k.id} ${sev}`));
  t.same(wanted.filter((w) => !emitted.has(w)), [], 'each catalogued id and severity has a test that emits it');
});
