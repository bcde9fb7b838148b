import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { parseDuration } from '../../format.js';
import type { TriageReport } from '../../model/triage.js';
import { renderText, triage } from '../../triage/report.js';
import { triageSources } from '../../triage/sources.js';
import { THRESHOLDS } from '../../triage/thresholds.js';
import type { AppDeps } from '../app.js';
import { query } from '../schemas.js';

const windowParam = z
  .string()
  .max(16)
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return THRESHOLDS.defaultWindowMs;
    const ms = parseDuration(s);
    if (ms === null || ms < 100 || ms > 30_000) {
      ctx.addIssue({ code: 'custom', message: `window must be a duration from 100ms to 30s, such as 2s, got ${JSON.stringify(s)}` });
      return z.NEVER;
    }
    return ms;
  })
  .describe('how long CPU throttling is measured (default 2s)');

export const triageRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const sources = triageSources(deps);
  app.get(
    '/v1/triage',
    {
      schema: {
        summary: 'One snapshot of the node through every rule: findings {id, severity, title, detail, evidence[], hint} and a verdict (ok, warning, critical)',
        querystring: query({ window: windowParam }),
      },
      config: { table: (b: TriageReport) => renderText(b) },
    },
    async (req) => triage(sources, { windowMs: req.query.window }),
  );
};
