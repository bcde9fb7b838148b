import type { Server as TlsServer } from 'node:tls';
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { loadKubeClient } from '../sources/kube/api.js';
import { VERSION } from '../version.js';
import type { AppDeps } from './deps.js';
import { installAuditLog } from './plugins/audit.js';
import { installAuth } from './plugins/auth.js';
import { installProblemHandlers } from './plugins/problems.js';
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
import { loadTls, watchTlsFiles, type TlsMaterial } from './tls.js';

export type App = FastifyInstance;

/**
 * The HTTP API over the sources in `deps`. Listening is the caller's business.
 * TLS (src/server/tls.ts) comes from the config unless `opts.tls` gives it (null: plain HTTP).
 */
export async function buildApp(deps: AppDeps, opts: { tls?: TlsMaterial | null } = {}): Promise<App> {
  const tls = opts.tls === undefined ? await loadTls(deps.config, deps.log) : opts.tls;
  const app = Fastify({
    // typed as plain HTTP either way: an https.Server is one to everything here
    ...(tls ? ({ https: { key: tls.key, cert: tls.cert, minVersion: 'TLSv1.2' } } as object) : {}),
    loggerInstance: deps.log as FastifyBaseLogger,
    // the audit hook writes one line per request instead of fastify's two
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // long IDs must reach validation and get a 400, not a 404
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 16 * 1024 },
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'nodetruth',
        version: VERSION,
        description: 'Read-only view of a Kubernetes node below the API server: CRI runtime, cgroup v2, /proc, journal, kernel log.',
      },
    },
    transform: jsonSchemaTransform,
  });

  // While shutting down, answer in-flight requests with Connection: close so their
  // keep-alive sockets end with them and close() does not wait for idle clients.
  app.addHook('onSend', async (_req, reply, payload) => {
    if (deps.shutdown.aborted) reply.header('connection', 'close');
    return payload;
  });
  installProblemHandlers(app);
  installAuditLog(app);
  installTextFormat(app);
  if (deps.config.auth === 'kubernetes') await loadKubeClient(); // before the hook's synchronous use
  installAuth(app, deps);

  if (tls?.source === 'file') {
    const watch = watchTlsFiles(tls, (key, cert) => (app.server as unknown as TlsServer).setSecureContext({ key, cert, minVersion: 'TLSv1.2' }), deps.log);
    app.addHook('onClose', async () => watch.stop());
  }
  await app.register(healthRoutes, { deps, tls: () => tls });
  await app.register(runtimeRoutes, { deps });
  await app.register(cgroupRoutes, { deps });
  await app.register(processRoutes, { deps });
  await app.register(nodeRoutes, { deps });
  await app.register(driftRoutes, { deps });
  await app.register(metricsRoutes, { deps });
  await app.register(triageRoutes, { deps });
  await app.register(logRoutes, { deps });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
