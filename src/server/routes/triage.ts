import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { TriageReport } from '../../model/triage.js';
import { renderText, triage } from '../../triage/report.js';
import { triageSources } from '../../triage/sources.js';
import type { AppDeps } from '../app.js';
import { query, triageWindow } from '../schemas.js';

export const triageRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const sources = triageSources(deps);
  app.get(
    '/v1/triage',
    {
      schema: {
        summary: 'One snapshot of the node through every rule: findings {id, severity, title, detail, evidence[], hint} and a verdict (ok, warning, critical)',
        querystring: query({ window: triageWindow }),
      },
      config: { table: (b: TriageReport) => renderText(b) },
    },
    async (req) => triage(sources, { windowMs: req.query.window }),
  );
};
