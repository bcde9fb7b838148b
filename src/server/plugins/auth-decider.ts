/**
 * The decision of --auth kubernetes for one bearer token and one access check, and its caches
 * and review budgets (auth.ts says how they admit callers): TokenReview, then
 * SubjectAccessReview, against the API server; allowed decisions refreshed ahead of their TTL,
 * refused ones cached apart; failures to reach the API server never cached.
 */
import { createHash } from 'node:crypto';
import { ERROR_TYPES, Problem } from '../../errors.js';
import type { AccessCheck } from '../../readers/kube/api.js';
import { isSourceError, SourceError } from '../../readers/errors.js';
import { SingleFlight } from '../../lib/concurrency.js';
import type { AppDeps } from '../app.js';
import { ReviewAdmission } from './review-admission.js';

/** Routes checked against another resource than --auth-resource, by route pattern. */
export const ROUTE_RESOURCES: ReadonlyMap<string, string> = new Map([['/metrics', 'nodes/metrics']]);

export const AUTH_CACHE = {
  /** an allowed decision is fresh this long after the review that made it */
  allowTtlMs: 60_000,
  /** the background re-review of an allowed entry in use starts this long before its TTL ends */
  refreshAheadMs: 10_000,
  /** past its TTL, an allowed entry whose re-review cannot reach the API server serves at most this much longer */
  allowStaleMs: 60_000,
  /** a failed re-review is tried again no sooner than this */
  refreshRetryMs: 5_000,
  denyTtlMs: 10_000,
  /** allowed (token, resource) pairs remembered at most; the least recently used goes first */
  maxEntries: 4096,
  /** refused pairs remembered at most, in their own cache; the oldest goes first */
  maxDenied: 4096,
  /** reviews of tokens in neither cache, all callers together, sustained and in a burst (every agent asks the same API server) */
  reviewsPerSecond: 10,
  reviewBurst: 20,
  /** the same, per source address: well under the global figures, so one address cannot spend them */
  reviewsPerSecondPerAddress: 2,
  reviewBurstPerAddress: 8,
  /** source addresses whose budget is remembered at most; the least recently seen goes first */
  maxAddresses: 4096,
} as const;

/** One failure of the same kind is logged at most this often (a flood must not flood the log). */
const FAILURE_LOG_INTERVAL_MS = 10_000;

type Decision =
  | { ok: true; user: string; groups: string[] }
  | { ok: false; status: 401 | 403; detail: string; user: string | null; groups: string[] };

interface Allowed {
  decision: Decision & { ok: true };
  /** when the review that allowed it was made */
  reviewedAt: number;
  /** no background re-review before this (after a failed one) */
  retryAt: number;
}

interface Denied {
  decision: Decision;
  expires: number;
}

function accessCheck(resource: string, nodeName: string): AccessCheck {
  const [res, sub = ''] = resource.split('/');
  return { verb: 'get', resource: res!, subresource: sub, name: nodeName };
}

/**
 * The clocks an AuthDecider reads unless it is given its own: the caches' and the buckets',
 * looked up at each use so a test can drive time for the app it builds (the buckets refill
 * with time: on a loaded machine a real clock lets more of a flood through). Both monotonic:
 * a wall clock set back would make every cached decision look younger than it is, or drain
 * the buckets.
 */
export const authClocks = {
  now: (): number => performance.now(),
  bucketNow: (): number => performance.now(),
};

export class AuthDecider {
  /** allowed decisions, in least-recently-used order (a hit moves its entry to the end) */
  private readonly allowed = new Map<string, Allowed>();
  /** refused decisions, in insertion order; a flood of bad tokens only ever evicts these */
  private readonly denied = new Map<string, Denied>();
  private readonly flights = new SingleFlight();
  private readonly admission: ReviewAdmission;
  /** per failure kind: when it was last logged, and how many went unlogged since */
  private readonly failureLog = new Map<string, { at: number; quiet: number }>();
  /** The check for every route not named in ROUTE_RESOURCES. */
  readonly check: AccessCheck;

  constructor(
    private readonly deps: Pick<AppDeps, 'kube' | 'config' | 'log'>,
    private readonly now: () => number = () => authClocks.now(),
    bucketNow: () => number = () => authClocks.bucketNow(),
  ) {
    this.check = accessCheck(deps.config.authResource, deps.config.nodeName);
    this.admission = new ReviewAdmission(
      {
        globalPerSecond: AUTH_CACHE.reviewsPerSecond,
        globalBurst: AUTH_CACHE.reviewBurst,
        perAddressPerSecond: AUTH_CACHE.reviewsPerSecondPerAddress,
        perAddressBurst: AUTH_CACHE.reviewBurstPerAddress,
        maxAddresses: AUTH_CACHE.maxAddresses,
      },
      bucketNow,
    );
  }

  /** The access a route needs. */
  checkFor(route: string | undefined): AccessCheck {
    const resource = route === undefined ? undefined : ROUTE_RESOURCES.get(route);
    return resource ? accessCheck(resource, this.deps.config.nodeName) : this.check;
  }

  /** Cached allowed decisions, refused ones, and source addresses with a budget. */
  get sizes(): { allowed: number; denied: number; addresses: number } {
    return { allowed: this.allowed.size, denied: this.denied.size, addresses: this.admission.addresses };
  }

  /** The decision for `token` on `check`, for a caller at `source` (its remote address: whose review budget a new token spends). */
  async decide(token: string, check: AccessCheck = this.check, source?: string): Promise<Decision> {
    const key = `${createHash('sha256').update(token).digest('hex')} ${check.resource}/${check.subresource}`;
    const now = this.now();
    const ok = this.allowed.get(key);
    if (ok) {
      const age = now - ok.reviewedAt;
      if (age >= 0 && age < AUTH_CACHE.allowTtlMs + AUTH_CACHE.allowStaleMs) {
        this.allowed.delete(key); // refresh: the entry in use is the last one evicted
        this.allowed.set(key, ok);
        if (age >= AUTH_CACHE.allowTtlMs - AUTH_CACHE.refreshAheadMs && now >= ok.retryAt) this.refresh(key, token, check, ok);
        return ok.decision;
      }
      // too stale to serve (or a test's clock set back before its review): reviewed again as a new token
      this.allowed.delete(key);
    }
    const no = this.denied.get(key);
    if (no && no.expires > now) return no.decision;
    if (no) this.denied.delete(key);
    return this.flights.do(key, async () => {
      // only a review that would reach the API server draws on the budgets
      const admitted = this.admission.admit(source);
      if (!admitted.ok) throw rateLimited(admitted.scope, admitted.retryAfterMs);
      const decision = await this.review(token, check);
      this.remember(key, decision);
      return decision;
    });
  }

  /**
   * Re-review an allowed entry in the background, at most one at a time per entry and
   * outside the review budgets. Allowed: fresh again. Refused: dropped, the refusal
   * cached. Not answered: kept (until it is too stale to serve) and tried again later.
   */
  private refresh(key: string, token: string, check: AccessCheck, entry: Allowed): void {
    entry.retryAt = Number.POSITIVE_INFINITY; // one in flight
    this.review(token, check).then(
      (decision) => this.remember(key, decision),
      () => {
        // logged by review(); the entry serves on within its bound
        entry.retryAt = this.now() + AUTH_CACHE.refreshRetryMs;
      },
    );
  }

  private remember(key: string, decision: Decision): void {
    const now = this.now();
    if (decision.ok) {
      this.denied.delete(key);
      this.allowed.delete(key);
      // in least-recently-used order: evict from the front
      while (this.allowed.size >= AUTH_CACHE.maxEntries) this.allowed.delete(this.allowed.keys().next().value!);
      this.allowed.set(key, { decision, reviewedAt: now, retryAt: 0 });
      return;
    }
    this.allowed.delete(key);
    this.denied.delete(key);
    // in insertion order: evict the oldest
    while (this.denied.size >= AUTH_CACHE.maxDenied) this.denied.delete(this.denied.keys().next().value!);
    this.denied.set(key, { decision, expires: now + AUTH_CACHE.denyTtlMs });
  }

  /**
   * Ask the API server. Throws (uncached) when it cannot be asked: a SourceError of the
   * same code that says what failed but not where the API server is (its address and the
   * cause are logged for the operator instead).
   */
  private async review(token: string, check: AccessCheck): Promise<Decision> {
    const access = this.deps.kube();
    if (!access.ok) {
      this.logFailure('no access', { reason: access.reason }, '--auth kubernetes: no access to the Kubernetes API server; tokens cannot be reviewed');
      throw new Problem('no_cluster_credentials', "--auth kubernetes cannot review tokens: nodetruth has no access to the Kubernetes API server; the agent's log says why");
    }
    let step = 'TokenReview';
    try {
      const tr = await access.api.tokenReview(token, this.deps.config.authAudiences);
      if (!tr.authenticated) return { ok: false, status: 401, detail: `token not authenticated: ${tr.error}`, user: null, groups: [] };
      step = 'SubjectAccessReview';
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
    } catch (err) {
      if (!isSourceError(err)) throw err;
      this.logFailure(`${step} ${err.code}`, { code: err.code, reason: err.message }, `--auth kubernetes: ${step} failed`);
      throw new SourceError(err.code, `--auth kubernetes could not review the token (${step}): ${ERROR_TYPES[err.code].means}; the agent's log has the details`);
    }
  }

  /** A warning for the operator, at most once per FAILURE_LOG_INTERVAL_MS per kind, with how many were not logged. */
  private logFailure(kind: string, fields: Record<string, unknown>, msg: string): void {
    const now = this.now();
    const last = this.failureLog.get(kind);
    if (last && now - last.at >= 0 && now - last.at < FAILURE_LOG_INTERVAL_MS) {
      last.quiet++;
      return;
    }
    this.deps.log.warn({ ...fields, ...(last?.quiet ? { unlogged: last.quiet } : {}) }, msg);
    this.failureLog.set(kind, { at: now, quiet: 0 });
  }
}

function rateLimited(scope: 'address' | 'global', retryAfterMs: number) {
  const detail =
    scope === 'address'
      ? `too many new bearer tokens to review from this address (at most ${AUTH_CACHE.reviewsPerSecondPerAddress}/s, burst ${AUTH_CACHE.reviewBurstPerAddress})`
      : `too many new bearer tokens to review (at most ${AUTH_CACHE.reviewsPerSecond}/s, burst ${AUTH_CACHE.reviewBurst}, all callers together)`;
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new Problem('too_many_reviews', `${detail}; retry in ${seconds} s`, undefined, seconds);
}
