import type { Server as TlsServer } from 'node:tls';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type RouteOptions } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { loadKubeClient } from '../readers/kube/api.js';
import type { Sources } from '../sources.js';
import { auditClientError, installAuditLog } from './plugins/audit.js';
import { installAuth } from './plugins/auth.js';
import { installHostCheck } from './plugins/host-check.js';
import { installLoadShed } from './plugins/load-shed.js';
import { installConnectionBounds } from './connections.js';
import { installSessionSecret } from './plugins/session-secret.js';
import { installRequestDeadline, SHUTDOWN_GRACE_MS } from './request-signal.js';
import { clientErrorAnswer, frameworkErrors, installProblemHandlers } from './plugins/problems.js';
import { collectRoutes, openApiDocument, type CompilersFactory } from './openapi.js';
import { installReadings, joinsAnswer } from './plugins/reading.js';
import { Readings } from '../reading.js';
import { installTextFormat } from './plugins/text-format.js';
import { cgroupRoutes } from './routes/cgroups.js';
import { driftRoutes } from './routes/drift.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { logRoutes } from './routes/logs.js';
import { nodeRoutes } from './routes/node.js';
import { processRoutes } from './routes/processes.js';
import { runtimeRoutes } from './routes/runtime.js';
import { triageRoutes } from './routes/triage.js';
import { timelineRoutes } from './routes/timeline.js';
import { loadTls, watchTlsFiles, type TlsMaterial } from './tls.js';

export type App = FastifyInstance;

/** What the routes are given: the process's sources and its shutdown signal (aborted when the agent stops: follow streams end on it). */
export interface AppDeps extends Sources {
  shutdown: AbortSignal;
}

/** The routes buildApp added to each app it built: the agent's own route table (serve --bundle routes by it). */
const routeTables = new WeakMap<object, readonly RouteOptions[]>();
export const routeTableOf = (app: App): readonly RouteOptions[] => routeTables.get(app) ?? [];

/** What a route table is given besides the app: the TLS in use, and every route of the app (for /openapi.json). */
interface RouteContext {
  tls: () => TlsMaterial | null;
  routes: readonly RouteOptions[];
}
/**
 * Routes an app serves: the agent's own (agentRoutes), GET /v1/bundle (registered by bundle/,
 * which builds on the server and never the other way), serve --bundle's replay of a bundle.
 */
export type RouteTable = (app: App, deps: AppDeps, ctx: RouteContext) => Promise<void>;

interface AppOptions {
  /** the process's: aborted when it stops */
  shutdown: AbortSignal;
  /** from the config (src/server/tls.ts) unless given; null: plain HTTP */
  tls?: TlsMaterial | null;
  /** the route tables served, in order (default: the agent's own) */
  routes?: readonly RouteTable[];
  /** headers every answer carries: the HTTP parser's refusals and fastify's own 503 while closing too */
  headers?: Readonly<Record<string, string>>;
  /** answers come from readings of the node (default); false for an app that reads no node (serve --bundle) */
  readings?: boolean;
}

/**
 * The one app builder: the HTTP API over `sources` (src/sources.ts createSources) with every
 * bound, hook and plugin in front of the route tables `opts.routes`. Listening is the caller's business.
 */
export async function buildApp(sources: Sources, opts: AppOptions): Promise<App> {
  const deps: AppDeps = { ...sources, shutdown: opts.shutdown };
  const headers = opts.headers ?? {};
  const tls = opts.tls === undefined ? await loadTls(deps.config, deps.log) : opts.tls;
  const app = Fastify({
    // typed as plain HTTP either way: an https.Server is one to everything here
    // (a client that never finishes its handshake is dropped after 10 s, not Node's 120 s)
    ...(tls ? ({ https: { key: tls.key, cert: tls.cert, minVersion: 'TLSv1.2', handshakeTimeout: 10_000 } } as object) : {}),
    loggerInstance: deps.log as FastifyBaseLogger,
    // the audit hook writes one line per request instead of fastify's two
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // What one client can hold. Socket-level: the whole request
    // (headers; these routes take no body) must arrive within 15 s (408 otherwise), and
    // an idle keep-alive socket is closed after 5 s. No idle timeout on a socket with a
    // request in flight: a quiet follow stream is legitimate; --request-timeout bounds
    // the rest. Headers stay within Node's default 16 KiB (431 beyond).
    requestTimeout: 15_000,
    keepAliveTimeout: 5_000,
    // what the router refuses before any route (a URL that does not decode, a path parameter past maxParamLength)
    frameworkErrors,
    clientErrorHandler(err: NodeJS.ErrnoException, socket: import('node:net').Socket) {
      answerClientError(deps, err, socket, headers);
    },
    // long IDs must reach validation and get a 400, not a 404
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 16 * 1024 },
    // The routes' zod schemas validate and serialize. Given as the factories, so fastify
    // never loads its default ajv and fast-json-stringify compilers (~45 ms CPU and ~90
    // modules at start-up); set later with setValidatorCompiler they still load.
    // (fastify types the factories as ajv's; any compiler of a route schema is one)
    schemaController: { compilersFactory: { buildValidator: () => validatorCompiler, buildSerializer: () => serializerCompiler } as unknown as CompilersFactory },
  }).withTypeProvider<ZodTypeProvider>();
  app.server.headersTimeout = 10_000;
  // beyond this, Node closes new connections at once (no answer: there is nothing to spare for one)
  app.server.maxConnections = deps.config.maxConnections;
  if (Object.keys(headers).length > 0) {
    // first on every request the HTTP server sees, whatever answers it; and again on every reply
    app.server.prependListener('request', (_req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
      for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    });
    app.addHook('onSend', async (_req, reply, payload) => {
      reply.headers(headers);
      return payload;
    });
  }

  // every route from here on, for /openapi.json (built on its first request: src/server/openapi.ts)
  const routes = collectRoutes(app);
  routeTables.set(app, routes);

  // While shutting down, answer in-flight requests with Connection: close so their
  // keep-alive sockets end with them and close() does not wait for idle clients.
  app.addHook('onSend', async (_req, reply, payload) => {
    if (deps.shutdown.aborted) reply.header('connection', 'close');
    return payload;
  });
  installProblemHandlers(app);
  // the deadline first: its outcome (timeout, client-gone) is set before the audit line is written
  installRequestDeadline(app, { timeoutMs: deps.config.requestTimeout, shutdown: deps.shutdown, shutdownGraceMs: SHUTDOWN_GRACE_MS });
  installAuditLog(app);
  installTextFormat(app);
  installHostCheck(app, deps); // --auth none only; after the audit hook, so a refused Host is audited
  installSessionSecret(app, deps); // --session-token only (attach); audited, and before auth and the load shedder
  if (deps.config.auth === 'kubernetes') await loadKubeClient(); // before the hook's synchronous use
  installAuth(app, deps);
  const readings = opts.readings !== false ? new Readings(deps.config.maxAge) : null;
  // after auth: a refused request never takes a slot; one whose answer its reading made takes none
  installLoadShed(app, readings ? { joins: joinsAnswer(readings) } : {});
  // after the load shedder: an admitted request enters its reading; after the text format, whose answers it shares
  if (readings) installReadings(app, readings);
  // drain timeout and bytes in flight; its onSend after the readings', which makes the Buffer
  installConnectionBounds(app, { drainTimeoutMs: deps.config.drainTimeout });

  if (tls?.source === 'file') {
    const watch = watchTlsFiles(tls, (key, cert) => (app.server as unknown as TlsServer).setSecureContext({ key, cert, minVersion: 'TLSv1.2' }), deps.log);
    app.addHook('onClose', async () => watch.stop());
  }
  for (const table of opts.routes ?? [agentRoutes]) await table(app, deps, { tls: () => tls, routes });
  return app;
}

/** The agent's own routes over the live node, and /openapi.json of every route the app has. */
export const agentRoutes: RouteTable = async (app, deps, { tls, routes }) => {
  await app.register(healthRoutes, { deps, tls });
  await app.register(runtimeRoutes, { deps });
  await app.register(cgroupRoutes, { deps });
  await app.register(processRoutes, { deps });
  await app.register(nodeRoutes, { deps });
  await app.register(driftRoutes, { deps });
  await app.register(metricsRoutes, { deps });
  await app.register(triageRoutes, { deps });
  await app.register(timelineRoutes, { deps });
  await app.register(logRoutes, { deps });
  let openapi: Promise<unknown> | null = null;
  app.get('/openapi.json', { schema: { hide: true } }, async () =>
    (openapi ??= openApiDocument(routes).catch((err: unknown) => {
      openapi = null; // not kept: the next request tries again
      throw err;
    })),
  );
};

/**
 * What the HTTP parser refused before it was a request (431 headers too large, 408
 * too slow, 400 malformed): a problem+json answer and its audit line, then the
 * socket is closed (fastify's default answers plain JSON and logs nothing).
 */
function answerClientError(deps: AppDeps, err: NodeJS.ErrnoException, socket: import('node:net').Socket, headers: Readonly<Record<string, string>>): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const { problem, raw } = clientErrorAnswer(err, undefined, { ...headers });
  auditClientError(deps.log as unknown as App['log'], problem.status, err.code ?? 'unknown', socket.remoteAddress);
  if (socket.writable) socket.write(raw);
  socket.destroy();
}
