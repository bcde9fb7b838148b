/**
 * Who may make the agent ask the API server about a token it does not know yet.
 *
 * Each source address has its own token bucket, and every review also takes one from a
 * global bucket, the cap on what all callers together can make the agent send to the API
 * server. A review is admitted only when both have one, and the address's is checked
 * first: an address that has spent its own budget is refused without touching the global
 * one, so one address's flood leaves the rest of the global budget to everyone else.
 *
 * The address buckets live in a bounded map, least recently used first out. IPv6 callers
 * are keyed by their /64 (one host commonly holds a whole /64, so per-address keys would
 * let it mint budgets), IPv4-mapped IPv6 by the IPv4 address.
 */
import { isIPv6 } from 'node:net';

/** A token bucket: `take()` is true while there is one, else false and `retryAfterMs` says how long until there is. */
class TokenBucket {
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
  /** whether a take() now would succeed, without taking */
  get available(): boolean {
    this.refill();
    return this.tokens >= 1;
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

interface AdmissionLimits {
  /** reviews per second and burst, all callers together */
  globalPerSecond: number;
  globalBurst: number;
  /** reviews per second and burst, per source address; below the global ones, so no one address can spend all of it */
  perAddressPerSecond: number;
  perAddressBurst: number;
  /** address buckets remembered at most; the least recently used goes first */
  maxAddresses: number;
}

type Admission = { ok: true } | { ok: false; scope: 'address' | 'global'; retryAfterMs: number };

/** The budget key of a remote address: the address itself, an IPv6 address's /64, 'unknown' without one. */
export function sourceKey(address: string | undefined): string {
  if (typeof address !== 'string' || address.length === 0 || address.length > 64) return 'unknown';
  const a = address.toLowerCase().replace(/%.*$/, '');
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(a);
  if (mapped) return mapped[1]!;
  if (!isIPv6(a)) return a;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const width = (gs: string[]) => gs.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const [head = '', tail] = a.split('::');
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - width(left) - width(right))).fill('0'), ...right];
  return `${all
    .slice(0, 4)
    .map((g) => (g.includes('.') ? '0' : parseInt(g, 16).toString(16)))
    .join(':')}::/64`;
}

export class ReviewAdmission {
  private readonly global: TokenBucket;
  /** address buckets in least-recently-used order (a use moves its entry to the end) */
  private readonly perAddress = new Map<string, TokenBucket>();

  constructor(
    readonly limits: AdmissionLimits,
    private readonly now: () => number,
  ) {
    this.global = new TokenBucket(limits.globalPerSecond, limits.globalBurst, now);
  }

  /** Address buckets held (bounded by maxAddresses). */
  get addresses(): number {
    return this.perAddress.size;
  }

  /** Admit one review for a caller at `address`, taking from its bucket and the global one, or say which is empty and for how long. */
  admit(address: string | undefined): Admission {
    const key = sourceKey(address);
    let mine = this.perAddress.get(key);
    if (mine) this.perAddress.delete(key);
    else {
      while (this.perAddress.size >= this.limits.maxAddresses) this.perAddress.delete(this.perAddress.keys().next().value!);
      mine = new TokenBucket(this.limits.perAddressPerSecond, this.limits.perAddressBurst, this.now);
    }
    this.perAddress.set(key, mine);
    if (!mine.available) return { ok: false, scope: 'address', retryAfterMs: mine.retryAfterMs };
    if (!this.global.take()) return { ok: false, scope: 'global', retryAfterMs: this.global.retryAfterMs };
    mine.take();
    return { ok: true };
  }
}
