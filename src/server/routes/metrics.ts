import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { deadlines } from '../../deadlines.js';
import { defaultInputs, type MetricsInputs } from '../../metrics/inputs.js';
import type { NodeMetrics } from '../../metrics/node-metrics.js';
import type { AppDeps } from '../app.js';

type CriObserver = (method: string, code: string, seconds: number) => void;
/** CRI calls observed before the first scrape, replayed into the histograms then (bounded). */
const MAX_EARLY_CALLS = 10_000;

/**
 * GET /metrics: Prometheus text format, read from the node at scrape time.
 * The registry (and prom-client with it, ~60 ms of start-up) is built on the
 * first scrape; CRI calls made before it are counted all the same.
 */
export const metricsRoutes: FastifyPluginAsyncZod<{ deps: AppDeps; inputs?: MetricsInputs }> = async (app, { deps, inputs }) => {
  const cri = deps.cri;
  const early: Parameters<CriObserver>[] = [];
  let forward: CriObserver | null = null;
  cri?.onCall((method, code, seconds) => {
    if (forward) forward(method, code, seconds);
    else if (early.length < MAX_EARLY_CALLS) early.push([method, code, seconds]);
  });
  let metrics: Promise<NodeMetrics> | null = null;
  const load = () =>
    (metrics ??= import('../../metrics/node-metrics.js').then(
      ({ NodeMetrics }) =>
        new NodeMetrics(inputs ?? defaultInputs(deps), {
          nodeName: deps.config.nodeName,
          deadlinesMs: deadlines(deps.config),
          ...(cri
            ? {
                observeCri: (fn: CriObserver) => {
                  for (const c of early.splice(0)) fn(...c);
                  forward = fn;
                },
              }
            : {}),
        }),
    ));
  app.get(
    '/metrics',
    {
      schema: { summary: 'Prometheus metrics: cAdvisor-compatible per pod and container cgroup, plus nodetruth_* for the runtime, CRI calls, node and kernel' },
      config: { answer: 'Prometheus text exposition format 0.0.4 (text/plain)' },
    },
    async (_req, reply) => {
      const m = await load();
      const body = await m.body();
      return reply.type(m.contentType).send(body);
    },
  );
};
