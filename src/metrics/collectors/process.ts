/**
 * The agent's own process (prom-client's default metrics under nodetruth_: CPU, memory,
 * handles, GC, event-loop lag), nodetruth_info naming the node it serves, and what the
 * agent survived or cut (src/process-guard.ts).
 */
import client, { Counter, Gauge } from 'prom-client';
import { guardCounts, type UncaughtKind } from '../../process-guard.js';
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
    // process-wide tallies (src/process-guard.ts), read at scrape time
    new Counter({
      name: 'nodetruth_uncaught_errors_total',
      help: 'Errors that escaped every handler while serving (an unhandled error event, an unhandled rejection), logged and survived; any increase is a bug worth reporting.',
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.reset();
        for (const kind of Object.keys(guardCounts.uncaught) as UncaughtKind[]) this.inc({ kind }, guardCounts.uncaught[kind]);
      },
    });
    new Counter({
      name: 'nodetruth_stalled_clients_total',
      help: 'What the agent did about clients that do not read their answers: action="cut" (the connection closed after no byte was taken for --drain-timeout), action="refused" (a request or answer refused for the unread bytes already held).',
      labelNames: ['action'],
      registers: [registry],
      collect() {
        this.reset();
        this.inc({ action: 'cut' }, guardCounts.drainCuts);
        this.inc({ action: 'refused' }, guardCounts.inFlightRefusals);
      },
    });
  },
};
