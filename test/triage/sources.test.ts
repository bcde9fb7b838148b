/**
 * The sources rule and the report's source list cover the optional sources too: a node-facts
 * read that does not answer (the /proc walk stuck behind a hung mount) is a source-unavailable
 * finding and a failed source in the report, like the kernel log's, not a silent absence of
 * node-facts findings.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { buildReport } from '../../src/triage/report.js';
import { criDeadlines, gatherSnapshot, SOURCE_DEADLINES, type TriageSources } from '../../src/triage/snapshot.js';
import { triageSources } from '../../src/triage/sources.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { healthySnapshot } from '../fixtures/triage-snapshot.js';
import { testApp } from '../helpers/app.js';

/** The healthy snapshot's values as sources; `facts` never answers. */
function sources(): TriageSources {
  const h = healthySnapshot();
  const v = <T>(g: { ok: boolean; value?: T }) => g.value as T;
  return {
    nodeName: h.nodeName,
    criEndpoint: h.criEndpoint,
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
  const s = await gatherSnapshot(sources(), { windowMs: 0, deadlines: { facts: 20 } });
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
  const r = buildReport(await gatherSnapshot(late, { windowMs: 0, deadlines: { runtime: 20, facts: 20 } }));
  t.match(r.findings.filter((f) => f.id.startsWith('runtime-')), [{ id: 'runtime-not-answering', severity: 'critical', detail: 'runtime did not answer within 20 ms' }]);
});

t.test("the runtime's deadlines follow --cri-timeout, never below the defaults", async (t) => {
  t.same(criDeadlines(2000), { runtime: SOURCE_DEADLINES.runtime, pods: SOURCE_DEADLINES.pods, containers: SOURCE_DEADLINES.containers }, 'the default --cri-timeout keeps the defaults');
  t.same(criDeadlines(10_000), { runtime: 25_000, pods: 25_000, containers: 40_000 });
  t.same(criDeadlines(1), criDeadlines(2000), 'a short --cri-timeout does not shorten them');
  // through the snapshot: a runtime that never answers is given the deadline its --cri-timeout earns
  const late = sources();
  late.criTimeoutMs = 2100;
  late.runtime = () => new Promise(() => {});
  const s = await gatherSnapshot(late, { windowMs: 0, deadlines: { facts: 20 } });
  t.match(s.runtime, { ok: false, timedOut: true, error: `runtime did not answer within ${criDeadlines(2100).runtime} ms` });
});
