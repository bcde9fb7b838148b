/**
 * The container runtime as nodetruth sees it over CRI: whether it answers and is ready
 * (Status), how its calls go (latency and errors by method and gRPC code, observed on
 * every call the agent makes, not only the scrape's), and each container's attempt.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { podLabels } from '../labels.js';
import type { Collector } from '../registry.js';

const CRI_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const runtimeCollector: Collector = {
  name: 'runtime',
  inputs: ['status', 'lists'],
  register({ registry, scrape, opts }) {
    const registers = [registry];
    const condition = (type: string) =>
      async function (this: Gauge) {
        const st = await scrape().status();
        this.set(st?.conditions.find((c) => c.type === type)?.status ? 1 : 0);
      };
    new Gauge({
      name: 'nodetruth_runtime_up',
      help: 'Whether the container runtime answered CRI Status within its deadline.',
      registers,
      async collect() {
        this.set((await scrape().status()) ? 1 : 0);
      },
    });
    new Gauge({ name: 'nodetruth_runtime_ready', help: 'CRI RuntimeReady condition (0 also when the runtime does not answer).', registers, collect: condition('RuntimeReady') });
    new Gauge({
      name: 'nodetruth_network_ready',
      help: 'CRI NetworkReady condition: the CNI plugin is initialized (0 also when the runtime does not answer).',
      registers,
      collect: condition('NetworkReady'),
    });

    const criDuration = new Histogram({
      name: 'nodetruth_cri_call_duration_seconds',
      help: 'Duration of CRI calls nodetruth made, by method and gRPC status code.',
      labelNames: ['method', 'code'],
      buckets: CRI_BUCKETS,
      registers,
    });
    const criErrors = new Counter({
      name: 'nodetruth_cri_errors_total',
      help: 'CRI calls that did not return OK, by method and gRPC status code (DEADLINE_EXCEEDED: the runtime did not answer in time).',
      labelNames: ['method', 'code'],
      registers,
    });
    opts.observeCri?.((method, code, seconds) => {
      criDuration.observe({ method, code }, seconds);
      if (code !== 'OK') criErrors.inc({ method, code });
    });

    const max = opts.maxCgroupSeries;
    new Gauge({
      name: 'nodetruth_container_attempt',
      help: 'The newest attempt (restart count) of each container the runtime lists, by pod and container name.',
      labelNames: ['namespace', 'pod', 'container', 'pod_uid'],
      registers,
      async collect() {
        this.reset();
        const lists = await scrape().lists();
        if (!lists) return;
        const pods = new Map(lists.sandboxes.map((p) => [p.id, p]));
        const newest = new Map<string, { labels: Record<string, string>; attempt: number }>();
        for (const c of lists.containers) {
          const p = podLabels(pods.get(c.podId), c);
          const labels = { namespace: p.namespace, pod: p.pod, container: c.name, pod_uid: p.pod_uid };
          const k = JSON.stringify(labels);
          const prev = newest.get(k);
          if (!prev || c.attempt > prev.attempt) newest.set(k, { labels, attempt: c.attempt });
        }
        for (const { labels, attempt } of [...newest.values()].slice(0, max)) this.set(labels, attempt);
      },
    });
  },
};
