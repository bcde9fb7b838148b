/**
 * `nodetruth serve --bundle FILE`: the HTTP API answered from a bundle, offline and
 * read-only. Every captured route gives back its stored answer: the status, the
 * content type and the body byte for byte (the `?format=text` tables are stored
 * too, so they are identical). The real plugins stand in front, as in
 * src/server/app.ts: problem+json errors, the audit line, the Host check (and
 * --auth kubernetes when asked), the request deadline, the text-format hook.
 *
 * What needs the live node answers 409 with a problem saying so: follow streams, a
 * throttling window other than the captured one, any parameters not captured.
 * /readyz and /healthz are this server's own: they say it serves a bundle, of which
 * node, captured when, by which version. Container and pod ids may be unique
 * prefixes, resolved against the captured ids as the live agent resolves them.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Problem } from '../errors.js';
import { loadKubeClient } from '../sources/kube/api.js';
import { VERSION } from '../version.js';
import type { AppDeps } from '../server/app.js';
import { installAuditLog } from '../server/plugins/audit.js';
import { installAuth, installHostCheck } from '../server/plugins/auth.js';
import { installProblemHandlers, sendProblem } from '../server/plugins/problems.js';
import { problemOf } from '../server/problem-types.js';
import { onlyMatch, prefixMatches } from '../sources/cri/ids.js';
import { isSourceError } from '../sources/errors.js';
import { installTextFormat, wantsText } from '../server/plugins/text-format.js';
import { installRequestDeadline, SHUTDOWN_GRACE_MS } from '../server/request-signal.js';
import { routeKey } from './format.js';
import type { Bundle } from './read.js';

/** The line every bundle server says first: it is not the node. */
export function bundleBanner(b: Bundle): string {
  const m = b.manifest;
  return `serving a BUNDLE, not a live node: node ${m.node} captured at ${m.capturedAt} by nodetruth ${m.version} (${b.file})`;
}

export async function buildBundleApp(bundle: Bundle, deps: AppDeps): Promise<FastifyInstance> {
  const m = bundle.manifest;
  const app = Fastify({
    loggerInstance: deps.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    requestTimeout: 15_000,
    keepAliveTimeout: 5_000,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 16 * 1024 },
  });
  app.server.headersTimeout = 10_000;
  app.server.maxConnections = deps.config.maxConnections;
  installProblemHandlers(app);
  installRequestDeadline(app, { timeoutMs: deps.config.requestTimeout, shutdown: deps.shutdown, shutdownGraceMs: SHUTDOWN_GRACE_MS });
  installAuditLog(app);
  installTextFormat(app);
  installHostCheck(app, deps);
  if (deps.config.auth === 'kubernetes') await loadKubeClient();
  installAuth(app, deps);
  // every answer says where it comes from, without touching the stored body
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('x-nodetruth-bundle', `${m.node} captured ${m.capturedAt}`);
    return payload;
  });

  const captured = `this is a bundle of node ${m.node} captured at ${m.capturedAt} by nodetruth ${m.version}`;
  const info = {
    file: bundle.file,
    node: m.node,
    capturedAt: m.capturedAt,
    version: m.version,
    formatVersion: m.formatVersion,
    routes: bundle.routes.size,
    trimmed: m.trimmed,
    failedSections: m.sections.filter((s) => s.error !== undefined).map((s) => `${s.kind} ${s.name}`.slice(0, 200)).slice(0, 50),
  };
  const readiness = { bundle: { ok: true, detail: `${bundleBanner(bundle)}; run without --bundle to read this machine` } };
  app.get('/healthz', async () => ({ status: 'ok', version: VERSION, bundle: info }));
  app.get(
    '/readyz',
    {
      config: {
        table: (b: { sources: Record<string, { ok: boolean; detail: string }> }) => ({
          columns: ['SOURCE', 'OK', 'DETAIL'],
          rows: Object.entries(b.sources).map(([name, s]) => [name, s.ok, s.detail]),
        }),
      },
    },
    async () => ({ status: 'ready', bundle: info, sources: readiness, tls: { enabled: false } }),
  );

  // route templates the captured agent served (its /openapi.json), for "captured?" vs "no such route"
  const templates: RegExp[] = [];
  const spec = bundle.routes.get('/openapi.json');
  if (spec) {
    try {
      const doc = JSON.parse(spec.body.toString('utf8')) as { paths?: Record<string, unknown> };
      for (const p of Object.keys(doc.paths ?? {}).slice(0, 1000)) {
        if (p.length > 512) continue;
        templates.push(new RegExp(`^${p.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}/]+\}/g, '[^/]+')}$`));
      }
    } catch {
      /* a bundle without a readable spec: every uncaptured URL is a 404 */
    }
  }
  const ids = { pods: new Set<string>(), containers: new Set<string>() };
  for (const key of bundle.routes.keys()) {
    const g = /^\/v1\/(pods|containers)\/([0-9a-f]{64})(?:[/?]|$)/.exec(key);
    if (g) ids[g[1] as 'pods' | 'containers'].add(g[2]!);
  }

  const notLive = (req: FastifyRequest, reply: FastifyReply, detail: string) =>
    sendProblem(req, reply, new Problem(409, 'Bundle is not the live node', `${detail}: ${captured}`, { capturedAt: m.capturedAt, node: m.node }));

  app.get('/v1/bundle', async (req, reply) => notLive(req, reply, 'a new capture needs the live node; the bundle file itself is the capture'));

  app.get('*', async (req, reply) => {
    const url = resolvePrefix(req.url, ids);
    if ('problem' in url) return sendProblem(req, reply, url.problem);
    const text = wantsText(req);
    const hit = bundle.routes.get(routeKey(url.url, text));
    if (hit) return reply.code(hit.status).type(hit.contentType).send(hit.body);
    const q = req.query as Record<string, unknown>;
    const path = req.url.split('?')[0]!.replace(/\/+$/, '');
    if (q.follow !== undefined && q.follow !== 'false' && q.follow !== '0') return notLive(req, reply, 'a follow stream needs the live node');
    if (path === '/v1/throttling') {
      const held = [...bundle.routes.values()].find((r) => r.url.startsWith('/v1/throttling'));
      return notLive(req, reply, `a new throttling window needs the live node; the bundle holds the sample ${held ? held.url.split('&')[0] : '(none)'}`);
    }
    if (templates.some((t) => t.test(path))) return notLive(req, reply, `${req.url.slice(0, 200)} was not captured (other parameters need the live node)`);
    return sendProblem(req, reply, new Problem(404, 'Not found', `no route ${req.method} ${path.slice(0, 200)}; see /openapi.json`));
  });
  return app;
}

/** An id prefix in /v1/pods/X or /v1/containers/X, resolved as the live agent does: unique → the full id; else 404 / 409. */
function resolvePrefix(url: string, ids: { pods: Set<string>; containers: Set<string> }): { url: string } | { problem: Problem } {
  const g = /^\/v1\/(pods|containers)\/([0-9a-f]{1,63})(?=[/?]|$)/.exec(url);
  if (!g) return { url };
  const kind = g[1] as 'pods' | 'containers';
  const what = kind === 'pods' ? 'pod sandbox' : 'container';
  const same = (id: string) => id;
  try {
    const id = onlyMatch(prefixMatches(ids[kind], g[2]!, same), same, {
      none: () => `no ${what} with id or prefix ${g[2]} in this bundle`,
      many: (n) => `${what} id prefix ${g[2]} matches ${n} in this bundle`,
    });
    return { url: `/v1/${kind}/${id}${url.slice(g[0].length)}` };
  } catch (err) {
    if (isSourceError(err)) return { problem: problemOf(err) };
    throw err;
  }
}
