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
 * Decisions are cached by the SHA-256 of the token (never the token itself) and the resource:
 * allowed for 60 s, refused for 10 s; failures to reach the API server are not
 * cached and answer 503/504. The token is never logged: the audit line carries
 * only the user the TokenReview names.
 *
 * Open without a token: GET /healthz only (liveness probes cannot send one).
 * Everything else, /readyz and /openapi.json included, needs the permission.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Problem } from '../../errors.js';
import type { AccessCheck } from '../../sources/kube/api.js';
import { SingleFlight } from '../../util/concurrency.js';
import type { AppDeps } from '../deps.js';

/** Routes answered without a token, by route pattern. */
export const OPEN_ROUTES: ReadonlySet<string> = new Set(['/healthz']);

/** Routes checked against another resource than --auth-resource, by route pattern. */
export const ROUTE_RESOURCES: ReadonlyMap<string, string> = new Map([['/metrics', 'nodes/metrics']]);

export const AUTH_CACHE = {
  allowTtlMs: 60_000,
  denyTtlMs: 10_000,
  /** distinct tokens remembered at most; the oldest entry goes first */
  maxEntries: 4096,
} as const;

/** A bearer token longer than this is refused without asking the API server. */
const MAX_TOKEN_LENGTH = 16 * 1024;

type Decision =
  | { ok: true; user: string; groups: string[] }
  | { ok: false; status: 401 | 403; detail: string; user: string | null; groups: string[] };

interface Entry {
  decision: Decision;
  expires: number;
}

export const unauthorized = (detail: string) => new Problem(401, 'Unauthorized', detail);
export const forbidden = (detail: string) => new Problem(403, 'Forbidden', detail);

export function accessCheck(resource: string, nodeName: string): AccessCheck {
  const [res, sub = ''] = resource.split('/');
  return { verb: 'get', resource: res!, subresource: sub, name: nodeName };
}

export class AuthDecider {
  private readonly cache = new Map<string, Entry>();
  private readonly flights = new SingleFlight();
  /** The check for every route not named in ROUTE_RESOURCES. */
  readonly check: AccessCheck;

  constructor(
    private readonly deps: Pick<AppDeps, 'kube' | 'config'>,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.check = accessCheck(deps.config.authResource, deps.config.nodeName);
  }

  /** The access a route needs. */
  checkFor(route: string | undefined): AccessCheck {
    const resource = route === undefined ? undefined : ROUTE_RESOURCES.get(route);
    return resource ? accessCheck(resource, this.deps.config.nodeName) : this.check;
  }

  get size(): number {
    return this.cache.size;
  }

  async decide(token: string, check: AccessCheck = this.check): Promise<Decision> {
    const key = `${createHash('sha256').update(token).digest('hex')} ${check.resource}/${check.subresource}`;
    const hit = this.cache.get(key);
    if (hit && hit.expires > this.now()) return hit.decision;
    if (hit) this.cache.delete(key);
    return this.flights.do(key, async () => {
      const decision = await this.review(token, check);
      this.remember(key, decision);
      return decision;
    });
  }

  private remember(key: string, decision: Decision): void {
    if (this.cache.size >= AUTH_CACHE.maxEntries) {
      const now = this.now();
      for (const [k, e] of this.cache) if (e.expires <= now) this.cache.delete(k);
      while (this.cache.size >= AUTH_CACHE.maxEntries) this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, { decision, expires: this.now() + (decision.ok ? AUTH_CACHE.allowTtlMs : AUTH_CACHE.denyTtlMs) });
  }

  /** Ask the API server. Throws (uncached) when it cannot be asked. */
  private async review(token: string, check: AccessCheck): Promise<Decision> {
    const access = this.deps.kube();
    if (!access.ok) throw new Problem(503, 'Source unavailable', `--auth kubernetes needs the Kubernetes API server: ${access.reason}`);
    const tr = await access.api.tokenReview(token, this.deps.config.authAudiences);
    if (!tr.authenticated) return { ok: false, status: 401, detail: `token not authenticated: ${tr.error}`, user: null, groups: [] };
    const sar = await access.api.subjectAccessReview(tr.user, check);
    const { username, groups } = tr.user;
    if (!sar.allowed) {
      const what = `${check.resource}${check.subresource ? `/${check.subresource}` : ''}`;
      return {
        ok: false,
        status: 403,
        detail: `user ${JSON.stringify(username)} cannot ${check.verb} ${what} of node ${JSON.stringify(check.name)}${sar.reason ? `: ${sar.reason}` : ''}`,
        user: username,
        groups,
      };
    }
    return { ok: true, user: username, groups };
  }
}

export function bearerToken(req: FastifyRequest): string | null {
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
    if (req.method === 'GET' || req.method === 'HEAD') {
      if (req.routeOptions.url !== undefined && OPEN_ROUTES.has(req.routeOptions.url)) return;
    }
    const token = bearerToken(req);
    if (!token) {
      reply.header('www-authenticate', 'Bearer realm="nodetruth"');
      throw unauthorized('a bearer token is required (Authorization: Bearer <token>); see --auth kubernetes in the README');
    }
    const d = await decider.decide(token, decider.checkFor(req.routeOptions.url));
    if (d.ok) {
      req.identity = { user: d.user, groups: d.groups };
      return;
    }
    if (d.user) req.identity = { user: d.user, groups: d.groups };
    if (d.status === 401) {
      reply.header('www-authenticate', 'Bearer realm="nodetruth", error="invalid_token"');
      throw unauthorized(d.detail);
    }
    throw forbidden(d.detail);
  });
  return decider;
}
