/** Whether each source answered within its deadline in this scrape, and how long it took: why a series is missing. */
import { Gauge } from 'prom-client';
import type { Collector } from '../registry.js';

export const scrapeCollector: Collector = {
  name: 'scrape',
  // it waits for what every other collector reads (ctx.inputs), none of its own
  inputs: [],
  register({ registry, scrape, inputs }) {
    new Gauge({
      name: 'nodetruth_scrape_source_up',
      help: 'Whether each source answered within its deadline in this scrape (runtime, cgroups, node, kubelet, kernel).',
      labelNames: ['source'],
      registers: [registry],
      async collect() {
        this.reset();
        const s = scrape();
        await s.all(inputs);
        for (const [source, o] of s.outcomes) this.set({ source }, o.ok ? 1 : 0);
      },
    });
    new Gauge({
      name: 'nodetruth_scrape_skipped_items',
      help: 'Items each source skipped in this scrape because they could not be read or were malformed (a cgroup, a node file); their series are missing, the rest stand. /v1/cgroups and /v1/node name them in warnings.',
      labelNames: ['source'],
      registers: [registry],
      async collect() {
        this.reset();
        const s = scrape();
        await s.all(inputs);
        for (const source of s.outcomes.keys()) this.set({ source }, s.skipped.get(source) ?? 0);
      },
    });
    new Gauge({
      name: 'nodetruth_scrape_source_duration_seconds',
      help: 'How long each source took in this scrape.',
      labelNames: ['source'],
      registers: [registry],
      async collect() {
        this.reset();
        const s = scrape();
        await s.all(inputs);
        for (const [source, o] of s.outcomes) this.set({ source }, Math.round(o.seconds * 1e6) / 1e6);
      },
    });
  },
};
