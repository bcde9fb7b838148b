/**
 * Per source of this scrape: whether it answered within its deadline, what it skipped, how
 * long it took. Why a series is missing.
 */
import { Gauge } from 'prom-client';
import type { Outcome } from '../../lib/deadline.js';
import type { Collector } from '../registry.js';
import type { MetricsSource, Scrape } from '../scrape.js';

const PER_SOURCE: readonly { name: string; help: string; value: (o: Outcome<unknown>, s: Scrape, source: MetricsSource) => number }[] = [
  {
    name: 'nodetruth_scrape_source_up',
    help: 'Whether each source answered within its deadline in this scrape (runtime, cgroups, node, kubelet, kernel, facts).',
    value: (o) => (o.ok ? 1 : 0),
  },
  {
    name: 'nodetruth_scrape_skipped_items',
    help: 'Items each source skipped in this scrape because they could not be read or were malformed (a cgroup, a node file); their series are missing, the rest stand. /v1/cgroups and /v1/node name them in warnings.',
    value: (_o, s, source) => s.skipped.get(source) ?? 0,
  },
  { name: 'nodetruth_scrape_source_duration_seconds', help: 'How long each source took in this scrape.', value: (o) => o.ms / 1000 },
];

export const scrapeCollector: Collector = {
  name: 'scrape',
  // it waits for what every other collector reads (ctx.inputs), none of its own
  inputs: [],
  register({ registry, scrape, inputs }) {
    for (const { name, help, value } of PER_SOURCE) {
      new Gauge({
        name,
        help,
        labelNames: ['source'],
        registers: [registry],
        async collect() {
          this.reset();
          const s = scrape();
          await s.all(inputs);
          for (const [source, o] of s.outcomes) this.set({ source }, value(o, s, source));
        },
      });
    }
  },
};
