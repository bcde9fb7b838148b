import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who asked, when --auth kubernetes is on (TokenReview username). */
    identity?: { user: string; groups: string[] };
  }
}

const startBytes = Symbol('startBytes');

/**
 * One JSON audit line per request (DESIGN.md security model): method, route
 * pattern, params, query, status, bytes written, duration, identity. Headers
 * are never logged, so a bearer token cannot reach the log.
 */
export function installAuditLog(app: FastifyInstance): void {
  app.addHook('onRequest', async (req) => {
    (req as unknown as Record<symbol, number>)[startBytes] = req.raw.socket?.bytesWritten ?? 0;
  });
  app.addHook('onResponse', async (req, reply) => {
    const before = (req as unknown as Record<symbol, number>)[startBytes] ?? 0;
    req.log.info(
      {
        audit: {
          method: req.method,
          route: req.routeOptions.url ?? null,
          params: req.params,
          query: req.query,
          status: reply.statusCode,
          bytes: (req.raw.socket?.bytesWritten ?? before) - before,
          durationMs: Math.round(reply.elapsedTime * 100) / 100,
          user: req.identity?.user ?? null,
          remote: req.ip,
        },
      },
      'request',
    );
  });
}
