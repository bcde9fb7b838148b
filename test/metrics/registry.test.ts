/**
 * The collectors registry: a scrape reads only the inputs its collectors name, and
 * nodetruth_scrape_source_* reports exactly those sources; every collector's families
 * come out, in registration order.
 */
import t from 'tap';
import { kubeletCollector } from '../../src/metrics/collectors/kubelet.js';
import { scrapeCollector } from '../../src/metrics/collectors/scrape.js';
import { deadlines } from '../../src/deadlines.js';
import type { MetricsInputs } from '../../src/metrics/inputs.js';
import { NodeMetrics } from '../../src/metrics/node-metrics.js';
import { COLLECTORS } from '../../src/metrics/registry.js';
import { parseProm } from './prom-text.js';

/** inputs that count their calls; any input nobody asked for throws if read */
function countingInputs() {
  const calls: string[] = [];
  const never = (name: string) => () => {
    calls.push(name);
    return Promise.reject(new Error(`${name} read`));
  };
  // `as`: the shape of MetricsInputs is the composition root's to change; every input here either counts or fails
  const inputs = {
    names: () => {
      calls.push('names');
      throw new Error('names read');
    },
    runtimeStatus: never('runtimeStatus'),
    runtimeLists: never('runtimeLists'),
    cgroups: never('cgroups'),
    pids: never('pids'),
    disks: never('disks'),
    oomKills: never('oomKills'),
    facts: never('facts'),
    kubelet: async () => {
      calls.push('kubelet');
      return { url: 'http://127.0.0.1:1/healthz', reachable: true, ok: true, status: 200, body: 'ok', durationMs: 1 };
    },
  } as MetricsInputs;
  return { inputs, calls };
}

t.test('a registry of two collectors reads only the kubelet and reports only it', async (t) => {
  const { inputs, calls } = countingInputs();
  const m = new NodeMetrics(inputs, { nodeName: 'n', deadlinesMs: deadlines({ criTimeoutMs: 2000 }) }, [kubeletCollector, scrapeCollector]);
  const s = parseProm(await m.metrics());
  t.same(calls, ['kubelet'], 'one read, shared by every gauge that needs it');
  t.same([...new Set(s.map((x) => x.name))].sort(), ['nodetruth_kubelet_healthz_up', 'nodetruth_scrape_skipped_items', 'nodetruth_scrape_source_duration_seconds', 'nodetruth_scrape_source_up']);
  t.same(s.filter((x) => x.name === 'nodetruth_scrape_source_up').map((x) => [x.labels.source, x.value]), [['kubelet', 1]]);
  t.equal(s.find((x) => x.name === 'nodetruth_kubelet_healthz_up')?.value, 1);
});

t.test('every collector has a name of its own and names only known inputs', async (t) => {
  const known = new Set(['status', 'lists', 'index', 'cgroups', 'pids', 'disks', 'kubelet', 'oomKills', 'facts']);
  t.equal(new Set(COLLECTORS.map((c) => c.name)).size, COLLECTORS.length);
  for (const c of COLLECTORS) for (const i of c.inputs) t.ok(known.has(i), `${c.name}: ${i}`);
});
