/**
 * --auth kubernetes: the same decision kubelet makes for its own API
 * (webhook authentication and authorization), against the API server.
 *
 *   bearer token ─ TokenReview (audiences from --auth-audiences) ─ 401 if not authenticated
 *                ─ SubjectAccessReview: get <--auth-resource> (default nodes/nodetruth, a subresource
 *                  only nodetruth asks about; not nodes/proxy, which opens the kubelet API) of --node-name ─ 403 if not allowed
 *                  (GET /metrics asks for nodes/metrics instead, as kubelet does for its own
 *                  /metrics: a scraper needs no more than Prometheus already has on kubelet)
 *
 * Admission, so that no anonymous flood can starve callers holding good tokens:
 * - A path that is no route (and a method a route lacks) is answered 404 by the
 *   not-found handler before any token is looked at: no review is ever spent on it.
 * - Decisions are cached by the SHA-256 of the token (never the token itself) and the
 *   resource: allowed ones in an LRU cache, refused ones for AUTH_CACHE.denyTtlMs in a
 *   separate bounded cache, so a flood of random tokens fills only the refused one and
 *   never evicts an allowed entry.
 * - A token in neither cache is reviewed only when both its source address's bucket and
 *   the global bucket admit it (review-admission.ts): past either, 429 with Retry-After
 *   and the API server is not asked. One address's flood spends its own budget only.
 * - An allowed entry keeps serving while it is re-reviewed in the background, from
 *   AUTH_CACHE.allowTtlMs - refreshAheadMs on (stale-while-revalidate). A re-review takes
 *   nothing from the budgets above. If it refuses, the entry is dropped and the refusal
 *   cached; if the API server cannot answer it, the entry serves on for at most
 *   AUTH_CACHE.allowStaleMs past its TTL (retried every refreshRetryMs), then it is
 *   dropped and the token is reviewed again like a new one: fail closed.
 * - Failures to reach the API server are not cached and answer 503/502/504 from the
 *   code table with what failed, never where the API server is: that, and the reason,
 *   go to the agent's log for the operator.
 * The token is never logged: the audit line carries only the user the TokenReview names.
 *
 * Open without a token: GET /healthz only (liveness probes cannot send one).
 * Everything else, /readyz and /openapi.json included, needs the permission.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Problem } from '../../errors.js';
import type { AppDeps } from '../app.js';
import { AuthDecider } from './auth-decider.js';

/** Routes answered without a token, by route pattern. */
export const OPEN_ROUTES: ReadonlySet<string> = new Set(['/healthz']);

/** A bearer token longer than this is refused without asking the API server. */
const MAX_TOKEN_LENGTH = 16 * 1024;

function bearerToken(req: FastifyRequest): string | null {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return null;
  const m = /^Bearer +([^\s]+) *$/i.exec(h);
  return m && m[1]!.length <= MAX_TOKEN_LENGTH ? m[1]! : null;
}

/** Installs the onRequest hook; a no-op unless --auth kubernetes. */
export function installAuth(app: FastifyInstance, deps: AppDeps, decider = new AuthDecider(deps)): AuthDecider | null {
  if (deps.config.auth !== 'kubernetes') return null;
  const access = deps.kube();
  if (!access.ok) deps.log.warn({ reason: access.reason }, '--auth kubernetes: no API server access yet; requests will get 503 until there is');
  app.addHook('onRequest', async (req, reply) => {
    const route = req.routeOptions.url;
    // no route: the not-found handler answers 404, and no token is reviewed for it
    if (route === undefined) return;
    if ((req.method === 'GET' || req.method === 'HEAD') && OPEN_ROUTES.has(route)) return;
    const token = bearerToken(req);
    if (!token) {
      reply.header('www-authenticate', 'Bearer realm="nodetruth"');
      throw new Problem('unauthorized', 'a bearer token is required (Authorization: Bearer <token>); see --auth kubernetes in docs/security.md');
    }
    const d = await decider.decide(token, decider.checkFor(route), req.ip);
    if (d.ok) {
      req.identity = { user: d.user, groups: d.groups };
      return;
    }
    if (d.user) req.identity = { user: d.user, groups: d.groups };
    if (d.status === 401) {
      reply.header('www-authenticate', 'Bearer realm="nodetruth", error="invalid_token"');
      throw new Problem('unauthorized', d.detail);
    }
    throw new Problem('forbidden', d.detail);
  });
  return decider;
}
