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
 * allowed for 60 s, refused for 10 s, in two separate bounded caches, so a flood of
 * random tokens fills only the refused one and never evicts an allowed entry (and
 * an allowed entry in use is refreshed to the young end of its cache). Reviews of
 * tokens in neither cache draw on a token bucket (AUTH_CACHE.reviewsPerSecond,
 * burst AUTH_CACHE.reviewBurst): past it, 429 with Retry-After, and the API server
 * is not asked. Failures to reach the API server are not cached and answer 503/504.
 * The token is never logged: the audit line carries only the user the TokenReview names.
 *
 * Open without a token: GET /healthz only (liveness probes cannot send one).
 * Everything else, /readyz and /openapi.json included, needs the permission.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Problem } from '../../errors.js';
import type { AccessCheck } from '../../sources/kube/api.js';
import { SingleFlight } from '../../util/concurrency.js';
import type { AppDeps } from '../app.js';

/** Routes answered without a token, by route pattern. */
export const OPEN_ROUTES: ReadonlySet<string> = new Set(['/healthz']);

/** Routes checked against another resource than --auth-resource, by route pattern. */
export const ROUTE_RESOURCES: ReadonlyMap<string, string> = new Map([['/metrics', 'nodes/metrics']]);

export const AUTH_CACHE = {
  allowTtlMs: 60_000,
  denyTtlMs: 10_000,
  /** allowed (token, resource) pairs remembered at most; the least recently used goes first */
  maxEntries: 4096,
  /** refused pairs remembered at most, in their own cache; the oldest goes first */
  maxDenied: 4096,
  /** reviews of tokens in neither cache, sustained and in a burst (every agent asks the same API server) */
  reviewsPerSecond: 10,
  reviewBurst: 20,
} as const;

/** More reviews than the bucket allows: 429, and the client is told when to come back. */
export class ReviewRateLimited extends Problem {
  constructor(readonly retryAfterSeconds: number) {
    super(429, 'Too many requests', `too many new bearer tokens to review (at most ${AUTH_CACHE.reviewsPerSecond}/s, burst ${AUTH_CACHE.reviewBurst}); retry in ${retryAfterSeconds} s`);
  }
}

/** A token bucket: `take()` is true while there is one, else false and `retryAfterMs` says how long until there is. */
export class TokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    readonly ratePerSecond: number,
    readonly burst: number,
    private readonly now: () => number,
  ) {
    this.tokens = burst;
    this.last = now();
  }
  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, t - this.last) / 1000) * this.ratePerSecond);
    this.last = t;
  }
  take(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
  get retryAfterMs(): number {
    this.refill();
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) / this.ratePerSecond) * 1000);
  }
}

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

/**
 * The clocks an AuthDecider reads unless it is given its own: the caches' wall clock and the
 * bucket's monotonic one, looked up at each use so a test can drive time for the app it builds
 * (the bucket refills with time: on a loaded machine a real clock lets more of a flood through).
 */
export const authClocks = {
  now: (): number => Date.now(),
  /** monotonic, so a wall clock set back cannot drain the bucket */
  bucketNow: (): number => performance.now(),
};

export class AuthDecider {
  /** allowed decisions, in least-recently-used order (a hit moves its entry to the end) */
  private readonly allowed = new Map<string, Entry>();
  /** refused decisions, in insertion order; a flood of bad tokens only ever evicts these */
  private readonly denied = new Map<string, Entry>();
  private readonly flights = new SingleFlight();
  private readonly bucket: TokenBucket;
  /** The check for every route not named in ROUTE_RESOURCES. */
  readonly check: AccessCheck;

  constructor(
    private readonly deps: Pick<AppDeps, 'kube' | 'config'>,
    private readonly now: () => number = () => authClocks.now(),
    bucketNow: () => number = () => authClocks.bucketNow(),
  ) {
    this.check = accessCheck(deps.config.authResource, deps.config.nodeName);
    this.bucket = new TokenBucket(AUTH_CACHE.reviewsPerSecond, AUTH_CACHE.reviewBurst, bucketNow);
  }

  /** The access a route needs. */
  checkFor(route: string | undefined): AccessCheck {
    const resource = route === undefined ? undefined : ROUTE_RESOURCES.get(route);
    return resource ? accessCheck(resource, this.deps.config.nodeName) : this.check;
  }

  get size(): number {
    return this.allowed.size + this.denied.size;
  }

  /** Cached allowed decisions, and refused ones. */
  get sizes(): { allowed: number; denied: number } {
    return { allowed: this.allowed.size, denied: this.denied.size };
  }

  async decide(token: string, check: AccessCheck = this.check): Promise<Decision> {
    const key = `${createHash('sha256').update(token).digest('hex')} ${check.resource}/${check.subresource}`;
    const now = this.now();
    const ok = this.allowed.get(key);
    if (ok && ok.expires > now) {
      this.allowed.delete(key); // refresh: the entry in use is the last one evicted
      this.allowed.set(key, ok);
      return ok.decision;
    }
    if (ok) this.allowed.delete(key);
    const no = this.denied.get(key);
    if (no && no.expires > now) return no.decision;
    if (no) this.denied.delete(key);
    return this.flights.do(key, async () => {
      // only a review that would reach the API server draws on the bucket
      if (!this.bucket.take()) throw new ReviewRateLimited(Math.max(1, Math.ceil(this.bucket.retryAfterMs / 1000)));
      const decision = await this.review(token, check);
      this.remember(key, decision);
      return decision;
    });
  }

  private remember(key: string, decision: Decision): void {
    const [cache, max, ttl] = decision.ok
      ? [this.allowed, AUTH_CACHE.maxEntries, AUTH_CACHE.allowTtlMs]
      : [this.denied, AUTH_CACHE.maxDenied, AUTH_CACHE.denyTtlMs];
    // both maps are in eviction order (oldest or least recently used first): evict from the front
    while (cache.size >= max) cache.delete(cache.keys().next().value!);
    cache.set(key, { decision, expires: this.now() + ttl });
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
    let d: Decision;
    try {
      d = await decider.decide(token, decider.checkFor(req.routeOptions.url));
    } catch (err) {
      if (err instanceof ReviewRateLimited) reply.header('retry-after', String(err.retryAfterSeconds));
      throw err;
    }
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

/** Host names a loopback agent without auth always answers to, with any port. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/** The host part of a Host header, lowercased, without the port; null when it is not a plain host[:port]. */
export function hostOf(header: string | undefined): string | null {
  if (typeof header !== 'string' || header.length === 0 || header.length > 260) return null;
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::\d{1,5})?$/.exec(header);
  return m ? m[1]!.toLowerCase() : null;
}

/**
 * --auth none: accept a request only when its Host names the agent on loopback
 * (issue 11, finding 6). Without it, a web page an operator opens while a
 * port-forward runs can rebind its own name to 127.0.0.1 and read the node: the
 * browser sends the attacker's name as Host, which this refuses.
 *
 * Any port is accepted: `kubectl port-forward` maps whatever local port the
 * operator chose to the agent's, so the Host's port is the client's, not ours,
 * and a rebinding page can put any port in its URL anyway; the name is what tells
 * the attack apart. The listen address's own name (e.g. 127.0.0.2) and
 * --allowed-hosts are accepted too.
 *
 * Every route is checked, /healthz included: the debug profile's probe sets
 * `host: 127.0.0.1` (Host 127.0.0.1:7070), and the DaemonSet, whose kubelet probes
 * send the pod IP, runs --auth kubernetes, where tokens do this job and the check is off.
 */
export function installHostCheck(app: FastifyInstance, deps: AppDeps): void {
  if (deps.config.auth !== 'none') return;
  const listen = deps.config.listen.host.includes(':') ? `[${deps.config.listen.host.toLowerCase()}]` : deps.config.listen.host.toLowerCase();
  const allowed = new Set([...LOOPBACK_HOSTS, listen, ...deps.config.allowedHosts.map((h) => h.replace(/\.$/, ''))]);
  app.addHook('onRequest', async (req) => {
    const host = hostOf(req.headers.host);
    if (host !== null && allowed.has(host.replace(/\.$/, ''))) return;
    const shown = typeof req.headers.host === 'string' ? JSON.stringify(req.headers.host.slice(0, 100)) : 'none';
    throw new Problem(
      421,
      'Misdirected request',
      `Host ${shown} is not this agent's: without --auth it answers only to ${[...allowed].join(', ')} (any port), against DNS rebinding; add a name with --allowed-hosts (NODETRUTH_ALLOWED_HOSTS)`,
    );
  });
}
