import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { defaultInputs, type MetricsInputs } from '../../metrics/inputs.js';
import { NodeMetrics } from '../../metrics/node-metrics.js';
import type { AppDeps } from '../deps.js';

/** GET /metrics: Prometheus text format, read from the node at scrape time. */
export const metricsRoutes: FastifyPluginAsyncZod<{ deps: AppDeps; inputs?: MetricsInputs }> = async (app, { deps, inputs }) => {
  const cri = deps.cri;
  const metrics = new NodeMetrics(inputs ?? defaultInputs(deps), {
    nodeName: deps.config.nodeName,
    ...(cri ? { observeCri: (fn: (m: string, c: string, s: number) => void) => cri.onCall(fn) } : {}),
  });
  app.get(
    '/metrics',
    { schema: { summary: 'Prometheus metrics: cAdvisor-compatible per pod and container cgroup, plus nodetruth_* for the runtime, CRI calls, node and kernel' } },
    async (_req, reply) => {
      const text = await metrics.metrics();
      return reply.type(metrics.contentType).send(text);
    },
  );
};
