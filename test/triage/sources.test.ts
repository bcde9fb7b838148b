/**
 * The sources rule and the report's source list cover the optional sources too: a node-facts
 * read that does not answer (the /proc walk stuck behind a hung mount) is a source-unavailable
 * finding and a failed source in the report, like the kernel log's, not a silent absence of
 * node-facts findings.
 */
import t from 'tap';
import { buildReport } from '../../src/triage/report.js';
import { gatherSnapshot, type TriageSources } from '../../src/triage/snapshot.js';
import { healthySnapshot } from '../fixtures/triage-snapshot.js';

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
  t.match(s.facts, { ok: false, error: 'node facts: no answer within 20 ms' });
  const r = buildReport(s);
  t.match(r.sources.facts, { ok: false, error: 'node facts: no answer within 20 ms' });
  t.match(r.findings, [{ id: 'source-unavailable', severity: 'info', title: /^Could not read the node facts/, detail: 'node facts: no answer within 20 ms' }]);
  t.equal(r.findings.length, 1, 'nothing else: the other sources answered');
  t.match(r.sources.kernel, { ok: true }, 'the kernel log problems are listed as a source too');
});

t.test('a snapshot that does not read the facts lists no facts source and no finding', async (t) => {
  const r = buildReport(healthySnapshot());
  t.equal(r.sources.facts, undefined);
  t.same(r.findings, []);
});
