/**
 * The sources rule and the report's source list cover the optional sources too: a node-facts
 * read that does not answer (the /proc walk stuck behind a hung mount) is a source-unavailable
 * finding and a failed source in the report, like the kernel log's, not a silent absence of
 * node-facts findings.
 */
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { buildReport } from '../../src/triage/report.js';
import { deadlines } from '../../src/deadlines.js';
import { gatherSnapshot, type TriageSources } from '../../src/triage/snapshot.js';
import { ownCgroup, triageSources } from '../../src/triage/sources.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { CAPTURED, containerCgroupPath, cpuStat, POD_UID, realNode, SPIN_ID } from '../fixtures/node-tree.js';
import { healthySnapshot } from '../fixtures/triage-snapshot.js';
import { testApp } from '../helpers/app.js';

/** The healthy snapshot's values as sources; `facts` never answers. */
function sources(): TriageSources {
  const h = healthySnapshot();
  const v = <T>(g: { ok: boolean; value?: T }) => g.value as T;
  return {
    nodeName: h.nodeName,
    criEndpoint: h.criEndpoint,
    deadlines: deadlines({ criTimeoutMs: 2000 }),
    runtime: async () => v(h.runtime),
    pods: async () => v(h.pods),
    containers: async () => v(h.containers),
    cgroups: async () => v(h.cgroups),
    throttling: async () => v(h.throttling),
    host: async () => v(h.host),
    cni: async () => v(h.cni),
    oom: async () => v(h.oom),
    kubeletJournal: async () => v(h.kubeletJournal),
    kernel: async () => ({ problems: [], warnings: [] }) as never,
    // a read that never settles (a statfs of a hung mount): only the snapshot's deadline ends it
    facts: () => new Promise(() => {}),
  };
}

t.test('node facts that do not answer are a source-unavailable finding and a failed source', async (t) => {
  const s = await gatherSnapshot(sources(), { windowMs: 0, deadlines: { nodeFacts: 20 } });
  t.match(s.facts, { ok: false, error: 'node facts did not answer within 20 ms' });
  const r = buildReport(s);
  t.match(r.sources.facts, { ok: false, error: 'node facts did not answer within 20 ms' });
  t.match(r.findings, [{ id: 'source-unavailable', severity: 'info', title: /^Could not read the node facts/, detail: 'node facts did not answer within 20 ms' }]);
  t.equal(r.findings.length, 1, 'nothing else: the other sources answered');
  t.match(r.sources.kernel, { ok: true }, 'the kernel log problems are listed as a source too');
});

t.test('a snapshot that does not read the facts lists no facts source and no finding', async (t) => {
  const r = buildReport(healthySnapshot());
  t.equal(r.sources.facts, undefined);
  t.same(r.findings, []);
});

t.test('a snapshot reads the kernel ring once: the OOM kills and the kernel problems come from the same read', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-ring-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // a ring holding a real memcg OOM report and the kernel problems fixture
  const kmsgPath = path.join(dir, 'kmsg.txt');
  writeFileSync(kmsgPath, readFileSync(kmsgFixture('oom-memcg-systemd.kmsg'), 'utf8') + readFileSync(kmsgFixture('kernel-problems.kmsg'), 'utf8'));
  const agent = await testApp(['--host-root', dir, '--cri-endpoint', 'unix:///nonexistent/cri.sock', '--kmsg-path', kmsgPath, '--node-name', 'node-a']);
  t.teardown(() => agent.close());
  const ring = agent.deps.kmsg;
  const readAll = ring.readAll.bind(ring);
  let reads = 0;
  ring.readAll = (signal) => {
    reads++;
    return readAll(signal);
  };
  const src = triageSources(agent.deps);
  const s = await gatherSnapshot(src, { windowMs: 0 });
  t.equal(reads, 1, 'one read of the ring for both readers');
  t.ok(s.oom.ok && s.oom.value.kills.length > 0, 'the OOM kills of the ring');
  t.ok(s.kernel?.ok && s.kernel.value.problems.some((p) => p.id === 'kernel-hung-task'), 'the kernel problems of the same ring');
  await gatherSnapshot(src, { windowMs: 0 });
  t.equal(reads, 2, 'the next snapshot reads the ring anew (an answer reflects the node at its request)');
});

t.test('a runtime that does not answer within the snapshot deadline is runtime-not-answering', async (t) => {
  const late = sources();
  late.runtime = () => new Promise(() => {});
  const r = buildReport(await gatherSnapshot(late, { windowMs: 0, deadlines: { runtimeStatus: 20, nodeFacts: 20 } }));
  t.match(r.findings.filter((f) => f.id.startsWith('runtime-')), [{ id: 'runtime-not-answering', severity: 'critical', detail: 'runtime did not answer within 20 ms' }]);
});

t.test("the snapshot's deadlines are the table's for the configuration: the runtime's follow --cri-timeout", async (t) => {
  const agent = await testApp(['--host-root', '/nonexistent', '--cri-endpoint', 'unix:///nonexistent/cri.sock', '--cri-timeout', '2100ms']);
  t.teardown(() => agent.close());
  const src = triageSources(agent.deps);
  t.same(src.deadlines, deadlines({ criTimeoutMs: 2100 }));
  t.ok(src.deadlines.runtimeStatus > 2100, "longer than one CRI call, so the call's own deadline error comes first");
  // through the snapshot: a runtime that never answers is given the deadline its --cri-timeout earns
  const late = sources();
  late.deadlines = src.deadlines;
  late.runtime = () => new Promise(() => {});
  const s = await gatherSnapshot(late, { windowMs: 0, deadlines: { nodeFacts: 20 } });
  t.match(s.runtime, { ok: false, timedOut: true, error: `runtime did not answer within ${src.deadlines.runtimeStatus} ms` });
});

t.test("the agent's own container is not a throttling finding: the measuring is its own work", async (t) => {
  // the agent in a debug pod on this node: its cgroup is one of the kubepods containers (the
  // spinner's here), and that container's cpu.stat moves on as a throttled one's does
  const node = realNode('systemd');
  t.teardown(node.cleanup);
  const spinPath = containerCgroupPath('systemd', 'burstable', POD_UID, SPIN_ID);
  const spinStat = path.join(node.root, 'sys/fs/cgroup', spinPath, 'cpu.stat');
  writeFileSync(spinStat, CAPTURED.spin.cpuStat);
  let tick = 0;
  const ticker = setInterval(() => {
    tick++;
    writeFileSync(`${spinStat}.next`, cpuStat({ usage: 1824308 + 9659 * tick, periods: 169 + tick, throttled: 168 + tick, throttledUsec: 14961853 + 89764 * tick }));
    renameSync(`${spinStat}.next`, spinStat);
  }, 50);
  t.teardown(() => clearInterval(ticker));
  const agent = await testApp(['--host-root', node.root, '--cri-endpoint', 'unix:///nonexistent/cri.sock', '--kmsg-path', path.join(node.root, 'none'), '--kubelet-healthz', 'http://127.0.0.1:9/healthz']);
  t.teardown(() => agent.close());
  // /proc/self/cgroup of the agent, as the kernel writes it (a cgroup v2 host, the host's cgroup namespace)
  const selfFile = (text: string) => {
    const f = path.join(node.root, `self-cgroup-${Math.random().toString(36).slice(2)}`);
    writeFileSync(f, text);
    return f;
  };
  const throttled = async (cgroupFile: string, pid = process.pid) => {
    const r = buildReport(await gatherSnapshot(triageSources(agent.deps, { cgroupFile, pid }), { windowMs: 600 }));
    return r.findings.filter((f) => f.id === 'cpu-throttling').map((f) => f.subject?.containerId);
  };
  t.same(await throttled(selfFile(`0::${containerCgroupPath('systemd', 'besteffort', POD_UID, 'f'.repeat(64))}\n`)), [SPIN_ID], 'an agent elsewhere: the spinner is throttled');
  t.same(await throttled(selfFile(`0::${spinPath}\n`)), [], "the agent in the spinner's container: left out");
  // in a cgroup namespace of its own the agent sees "0::/"; the spinner's cgroup.procs lists its pid
  writeFileSync(path.join(node.root, 'sys/fs/cgroup', spinPath, 'cgroup.procs'), `4242\n${process.pid}\n`);
  t.same(await throttled(selfFile('0::/\n')), [], "the agent's pid in the spinner's cgroup.procs: left out");
  t.same(await throttled(selfFile('0::/\n'), process.pid + 100_000), [SPIN_ID], 'another pid: the spinner is throttled');
  t.equal(ownCgroup(selfFile(`12:pids:/x\n0::${spinPath}\n`)), spinPath);
  t.equal(ownCgroup(selfFile('0::/../../kubepods.slice\n')), null, 'a path outside its namespace is not a host path');
  t.equal(ownCgroup(path.join(node.root, 'missing')), null);
});

t.test('the kubelet journal source reads the window\'s newest records: a PLEG error after 20,000 info lines is found', async (t) => {
  const { existsSync, mkdirSync } = await import('node:fs');
  const { JOURNAL_REMOTE, kubeletAt, writeJournal } = await import('../fixtures/journal/gen.js');
  const { THRESHOLDS } = await import('../../src/rules/thresholds.js');
  if (!existsSync(JOURNAL_REMOTE)) return t.plan(0, `skipped: ${JOURNAL_REMOTE} is not installed: no real journal can be written`);
  // journalctl 252 seeks to --since and counts --lines from there: read forward, a window holding
  // more than journalMaxEntries records gives its oldest ones, and the newest error is never seen
  const n = THRESHOLDS.journalMaxEntries + 1;
  const nowUs = Date.now() * 1000;
  const first = nowUs - 5 * 60_000_000;
  const step = Math.floor((5 * 60_000_000 - 1_000_000) / n);
  const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-triage-journal-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(path.join(root, 'var/log/pods'), { recursive: true });
  await writeJournal(
    path.join(root, 'var/log/journal'),
    'system',
    (function* () {
      for (let i = 0; i < n; i++) {
        const text = i === n - 1 ? 'E1202 08:00:00.000000     700 kubelet.go:2412] "Skipping pod synchronization" err="PLEG is not healthy: pleg was last seen active 3m0s ago"' : `I1202 08:00:00.000000     700 kubelet.go:2400] "SyncLoop (probe)" seq=${i}`;
        yield kubeletAt({ realtimeUs: first + i * step, monoUs: 1_000_000 + i * step, message: text });
      }
    })(),
  );
  const agent = await testApp(['--host-root', root, '--cri-endpoint', 'unix:///nonexistent/cri.sock', '--kmsg-path', path.join(root, 'none')]);
  t.teardown(() => agent.close());
  const r = await triageSources(agent.deps).kubeletJournal(first - 1, AbortSignal.timeout(60_000));
  t.equal(r.records.length, THRESHOLDS.journalMaxEntries, 'bounded as before');
  t.match(r.records.at(-1)?.message, /PLEG is not healthy/, 'the newest record is in it, last (oldest first)');
  t.ok(r.records[0]!.time < r.records.at(-1)!.time, 'oldest first');
});
