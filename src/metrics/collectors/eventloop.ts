/** The agent's own event loop: the longest delay since start, which no scrape resets. */
import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks';
import { Gauge } from 'prom-client';
import type { Collector } from '../registry.js';

/**
 * One delay monitor per process (it is the process's event loop), started with the first
 * registration and never reset: a stall an hour ago still shows, whoever scraped since.
 */
let loopDelay: ELDHistogram | null = null;
function eventLoopDelay(): ELDHistogram {
  if (!loopDelay) {
    loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
  }
  return loopDelay;
}

export const eventLoopCollector: Collector = {
  name: 'eventloop',
  inputs: [],
  register({ registry }) {
    const loop = eventLoopDelay();
    new Gauge({
      name: 'nodetruth_eventloop_delay_max_seconds',
      help: 'Longest event-loop delay since the agent started (perf_hooks.monitorEventLoopDelay at 10 ms resolution: about 0.01 means no delay). Never reset, unlike nodetruth_nodejs_eventloop_lag_max_seconds, which covers only the time since the previous scrape of anyone.',
      registers: [registry],
      collect() {
        this.set(loop.max / 1e9);
      },
    });
  },
};
