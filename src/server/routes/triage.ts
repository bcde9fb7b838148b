import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { TriageReport } from '../../model/triage.js';
import type { TriageSources } from '../../triage/snapshot.js';
import type { AppDeps } from '../app.js';
import { query, triageWindow } from '../schemas.js';

type Report = typeof import('../../triage/report.js');

export const triageRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  // the rules (~36 modules) are loaded on the first request, not before the agent listens: start-up does not pay for them
  let report: Report | null = null;
  let loading: Promise<{ report: Report; sources: TriageSources }> | null = null;
  const load = () =>
    (loading ??= Promise.all([import('../../triage/report.js'), import('../../triage/sources.js')]).then(([r, s]) => {
      report = r;
      return { report: r, sources: s.triageSources(deps) };
    }));
  app.get(
    '/v1/triage',
    {
      schema: {
        summary: 'One snapshot of the node through every rule: findings {id, severity, title, detail, evidence[], hint} and a verdict (ok, warning, critical)',
        querystring: query({ window: triageWindow }),
      },
      // only called on an answer of the handler, so after load()
      config: { table: (b: TriageReport) => report!.renderText(b) },
    },
    async (req) => {
      const { report: r, sources } = await load();
      return r.triage(sources, { windowMs: req.query.window });
    },
  );
};
