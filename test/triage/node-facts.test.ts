/**
 * The node-facts rule on facts read from a host laid out as a real one (test/fixtures/node-facts.ts):
 * every finding it emits carries its evidence, and each is in the catalogue under its rule.
 */
import t from 'tap';
import { FINDINGS } from '../../src/triage/findings.js';
import { THRESHOLDS } from '../../src/rules/thresholds.js';
import { RULES, SnapshotIndex } from '../../src/triage/rules/index.js';
import { factsHost, troubledFacts } from '../fixtures/node-facts.js';
import { healthySnapshot, ok } from '../fixtures/triage-snapshot.js';
import { OOM_CHILD_ID, POD_UID } from '../fixtures/node-tree.js';

const rule = RULES.find((r) => r.name === 'node-facts')!;

t.test('node facts from a real-shaped host: each row found with its evidence, catalogued', async (t) => {
  const fx = await factsHost('systemd');
  t.teardown(fx.cleanup);
  const facts = await troubledFacts(fx);
  const s = { ...healthySnapshot(), facts: ok(facts) };
  const found = rule.run(s, new SnapshotIndex(s));
  t.same(found.map((f) => [f.id, f.severity]), [
    ['mount-not-answering', 'critical'],
    ['kubelet-cert-expired', 'critical'],
    ['kubelet-cert-expiring', 'warning'],
    ['conntrack-table-full', 'critical'],
    ['eviction-threshold-crossed', 'critical'],
    ['eviction-threshold-crossed', 'warning'],
    ['zombies-in-pod', 'warning'],
    ['kernel-tainted', 'warning'],
    ['runtime-slow', 'warning'],
  ]);
  const cat = new Map(FINDINGS.map((k) => [k.id, k]));
  for (const f of found) {
    t.ok(cat.get(f.id)?.rule === 'node-facts' && cat.get(f.id)!.severities.includes(f.severity), `${f.id} catalogued`);
    t.ok(f.evidence.length > 0 && f.evidence.every((e) => e.path && e.excerpt), `${f.id} has evidence`);
  }
  t.match(found.find((f) => f.id === 'kubelet-cert-expired')!.evidence[0], { path: '/var/lib/kubelet/pki/kubelet-client-current.pem', excerpt: /-> \/var\/lib\/kubelet\/pki\/kubelet-client-2025/ });
  t.match(found.find((f) => f.id === 'eviction-threshold-crossed' && f.severity === 'warning')!.evidence[0], { path: '/etc/kubernetes/kubelet-config.yaml', excerpt: 'evictionSoft: nodefs.available: "30%"' });
  t.match(found.find((f) => f.id === 'zombies-in-pod')!.subject, { podUid: POD_UID, containerId: OOM_CHILD_ID });
  t.equal(found.find((f) => f.id === 'processes-d-state'), undefined, 'two D-state processes are below the threshold of 3');
  t.same(rule.run(healthySnapshot(), new SnapshotIndex(healthySnapshot())), [], 'no facts read: nothing');
});

t.test('a statfs queued behind a busy pool, refused a slot, or out for less than mountHungSeconds is no hung mount', async (t) => {
  // seen in the node VM under emulation during a capture: three false mount-not-answering criticals
  const fx = await factsHost('systemd');
  t.teardown(fx.cleanup);
  const facts = await troubledFacts(fx);
  const s = healthySnapshot();
  const at = (msAgo: number) => new Date(s.nowMs - msAgo).toISOString();
  facts.mounts = [
    { path: '/', answered: false, reason: 'no free statfs slot within 1000 ms (2 mounts not answering)', since: at(60_000), outstanding: false },
    { path: '/var/lib/containerd', answered: false, reason: 'statfs did not return within 1000 ms', since: at(1_500), outstanding: true },
    { path: '/mnt/nfs', answered: false, reason: 'statfs did not return within 1000 ms', since: at(THRESHOLDS.mountHungSeconds * 1000 + 1), outstanding: true },
    { path: '/var/lib/kubelet', answered: true, ms: 3 },
  ];
  const hung = rule.run({ ...s, facts: ok(facts) }, new SnapshotIndex(s)).filter((f) => f.id === 'mount-not-answering');
  t.same(hung.map((f) => f.evidence[0]!.path), ['/mnt/nfs']);
});
