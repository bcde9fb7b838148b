import { PassThrough } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Problem } from '../errors.js';
import { agentRoutes, type AppDeps, type RouteTable } from '../server/app.js';
import { exemptFromDeadline, requestSignal } from '../server/request-signal.js';
import { query } from '../server/schemas.js';
import { SESSION_HEADER } from '../server/plugins/session-secret.js';
import { durationWithin } from '../validate.js';
import type { CaptureFigures } from './capture.js';
import { DEFAULT_MAX_BYTES, defaultBundleName, parseSize, SINCE, SINCE_TEXT, type Manifest } from './format.js';

const since = z
  .string()
  .max(16)
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return 3600_000;
    const ms = durationWithin(s, SINCE);
    if (ms === null) {
      ctx.addIssue({ code: 'custom', message: `since must be ${SINCE_TEXT}, got ${JSON.stringify(s)}` });
      return z.NEVER;
    }
    return ms;
  });
const maxSize = z
  .string()
  .max(16)
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return DEFAULT_MAX_BYTES;
    const n = parseSize(s);
    if (n === null || n < 2 ** 20 || n > 2 ** 30) {
      ctx.addIssue({ code: 'custom', message: `maxSize must be a size from 1MiB to 1GiB, such as 64MiB, got ${JSON.stringify(s)}` });
      return z.NEVER;
    }
    return n;
  });

/**
 * GET /v1/bundle: the node captured as a streamed tar.gz (capture.ts),
 * behind the same auth as every route: the capture calls the routes with the
 * caller's own Authorization, so a bundle holds what that caller may read. One at
 * a time (a capture reads the whole node); exempt from --request-timeout (it
 * takes longer by nature) but bounded by --capture-timeout, ended when the client
 * goes away (or stops reading past --drain-timeout) or the agent stops. The slot is
 * given back when the capture has ended, however it ended.
 */
const bundlePlugin: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  let running = false;
  app.get(
    '/v1/bundle',
    {
      schema: {
        summary: 'A streamed tar.gz capture of the node: every read route\'s answer, the raw evidence, manifest.json; `nodetruth serve --bundle FILE` answers this API from it',
        querystring: query({ since: since.describe('journal since (default 1h)'), maxSize: maxSize.describe('size budget, uncompressed (default 64MiB)') }),
      },
      config: { answer: 'a tar.gz stream (application/gzip), with a Content-Disposition file name' },
    },
    async (req, reply) => {
      // the capture and tar code is loaded on the first request, not before the agent listens: start-up does not pay for it
      const { captureBundle } = await import('./capture.js');
      if (running) throw new Problem('capture_running', 'a capture is already running; one at a time', undefined, 10);
      running = true;
      exemptFromDeadline(req);
      const signal = AbortSignal.any([requestSignal(req), deps.shutdown]);
      const out = new PassThrough();
      // the capture's failure is logged below; a destroyed stream's late 'error' must not reach the process
      out.on('error', () => {});
      const headers: Record<string, string> = {};
      if (typeof req.headers.host === 'string') headers.host = req.headers.host;
      if (typeof req.headers.authorization === 'string') headers.authorization = req.headers.authorization;
      // an attach session's agent asks every request for its token, the capture's own too
      const session = req.headers[SESSION_HEADER];
      if (typeof session === 'string') headers[SESSION_HEADER] = session;
      const argv = ['GET', req.url.slice(0, 1024)];
      // the one audit line of the capture (its injected requests have none): how many answers, how many bytes before gzip
      const onManifest = (m: Manifest, f: CaptureFigures) => {
        req.auditExtra = { ...req.auditExtra, capture: { answers: f.answers, answerBytes: f.answerBytes, uncompressedBytes: m.bytes, sections: m.sections.length, failedSections: f.failedSections, trimmed: m.trimmed } };
      };
      captureBundle({ app, deps, sinceMs: req.query.since, maxBytes: req.query.maxSize, argv, headers, signal, onManifest }, out)
        .catch((err: Error) => {
          if (!signal.aborted) req.log.warn({ err }, 'bundle capture failed');
          out.destroy(err); // a cut stream must not look like a complete bundle
        })
        .finally(() => {
          running = false;
        });
      return reply
        .type('application/gzip')
        .header('content-disposition', `attachment; filename="${defaultBundleName(deps.config.nodeName)}"`)
        .send(out);
    },
  );
};

/** GET /v1/bundle, as a route table of the one app builder: the server knows nothing of bundles. */
const bundleRoute: RouteTable = async (app, deps) => {
  await app.register(bundlePlugin, { deps });
};

/** The live agent's routes: the server's own and GET /v1/bundle (serve, capture and the tests build the app with these). */
export const LIVE_ROUTES: readonly RouteTable[] = [agentRoutes, bundleRoute];
