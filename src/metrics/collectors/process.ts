/**
 * The agent's own process (prom-client's default metrics under nodetruth_: CPU, memory,
 * handles, GC, event-loop lag) and nodetruth_info naming the node it serves.
 */
import client, { Gauge } from 'prom-client';
import type { Collector } from '../registry.js';

export const processCollector: Collector = {
  name: 'process',
  inputs: [],
  register({ registry, opts }) {
    client.collectDefaultMetrics({ register: registry, prefix: 'nodetruth_' });
    // gauges named *_total trip promtool's lint; the same counts are there by type without the suffix
    for (const n of ['active_handles_total', 'active_requests_total', 'active_resources_total']) registry.removeSingleMetric(`nodetruth_nodejs_${n}`);
    new Gauge({
      name: 'nodetruth_info',
      help: 'Constant 1, labelled with the node name nodetruth serves.',
      labelNames: ['node'],
      registers: [registry],
      collect() {
        this.set({ node: opts.nodeName }, 1);
      },
    });
  },
};
