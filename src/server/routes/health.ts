import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { VERSION } from '../../version.js';
import type { SourceReadiness } from '../../sources.js';
import { deadlines } from '../../deadlines.js';
import { withinDeadline } from '../../lib/deadline.js';
import type { AppDeps } from '../app.js';
import { query } from '../schemas.js';
import { publicTlsInfo, type TlsMaterial } from '../tls.js';

export const healthRoutes: FastifyPluginAsyncZod<{ deps: AppDeps; tls?: () => TlsMaterial | null }> = async (app, { deps, tls = () => null }) => {
  // each check within the table's bound: a wedged runtime must not wedge readiness
  const ms = deadlines(deps.config).readiness;
  const check = async (name: string, fn: () => Promise<SourceReadiness>) => {
    const o = await withinDeadline(fn, ms, name);
    return [name, o.ok ? o.value : { ok: false, detail: o.timedOut ? `no answer within ${ms} ms` : o.error }] as const;
  };
  app.get('/healthz', { schema: { summary: 'The agent is alive', querystring: query({}) } }, async () => ({ status: 'ok', version: VERSION }));

  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Which sources are reachable. The agent is ready (200) even when some are not: each layer answers on its own.',
        querystring: query({}),
      },
      config: {
        table: (b: { sources: Record<string, SourceReadiness>; tls: ReturnType<typeof publicTlsInfo> }) => ({
          columns: ['SOURCE', 'OK', 'DETAIL'],
          rows: [
            ...Object.entries(b.sources).map(([name, s]) => [name, s.ok, s.detail]),
            ['tls', b.tls.enabled, b.tls.enabled ? `${b.tls.source}, SHA-256 ${b.tls.fingerprint256}, pin ${b.tls.publicKeyPin}` : 'plain HTTP (loopback)'],
          ],
        }),
      },
    },
    async () => {
      const sources = Object.fromEntries(await Promise.all([...deps.readiness].map(([name, fn]) => check(name, fn))));
      // the certificate this agent serves (it changes on every start when self-signed)
      return { status: 'ready', sources, tls: publicTlsInfo(tls()) };
    },
  );
};
