/** Whether the kubelet answers its healthz: a node whose kubelet is down looks fine from the API server for a while. */
import { Gauge } from 'prom-client';
import type { Collector } from '../registry.js';

export const kubeletCollector: Collector = {
  name: 'kubelet',
  inputs: ['kubelet'],
  register({ registry, scrape }) {
    new Gauge({
      name: 'nodetruth_kubelet_healthz_up',
      help: "Whether kubelet's healthz endpoint answered 200.",
      registers: [registry],
      async collect() {
        const k = await scrape().kubelet();
        this.set(k?.ok ? 1 : 0);
      },
    });
  },
};
