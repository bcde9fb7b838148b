/**
 * statfs with a deadline. A statfs of a hung mount (a dead NFS server, a FUSE daemon
 * that stopped answering) never returns: the libuv pool thread running it waits in the
 * kernel for good, and so does the resolve (lstat) before it. Node cannot cancel it.
 * So every statfs the agent makes goes through this one box for the whole process:
 *
 * - at most `maxCalls` at once (libuv has 4 pool threads, the /proc limiter may hold
 *   2: two hung mounts here and two stuck cmdline reads there would be all of them);
 * - each waited for at most `timeoutMs`, then the caller gets "did not answer" and goes on;
 * - a path whose call is still out is not asked again until it returns: the answer is
 *   "not answering since <time>" at once, so a hung mount costs one thread, not one per
 *   request, and is itself reported (GET /v1/node `facts.mounts`, triage `mount-not-answering`).
 */
import type { StatsFs } from 'node:fs';
import type { MountAnswer } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { withinDeadline } from '../../lib/deadline.js';
import { Slots } from '../../lib/slots.js';

export const STATFS_LIMITS = {
  maxCalls: 2,
  timeoutMs: 1000,
} as const;

/**
 * `outstanding`: this path's own call is still out (slow, or hung if it stays out); false when
 * the box had no free slot in time, which says nothing about this mount (a busy pool, other
 * mounts hung). Triage calls a mount hung only when its call has been out for a while.
 */
export type Timed<T> = { ok: true; value: T; ms: number } | { ok: false; reason: string; since: string; outstanding: boolean };

export class StatfsBox {
  /** path → when its still-unanswered call started */
  private readonly out = new Map<string, number>();
  /** the last answer per path (for facts.mounts) */
  private readonly seen = new Map<string, MountAnswer>();
  /** calls running, including those past their deadline */
  private readonly slots: Slots;

  constructor(
    readonly maxCalls: number = STATFS_LIMITS.maxCalls,
    readonly timeoutMs: number = STATFS_LIMITS.timeoutMs,
  ) {
    this.slots = new Slots(maxCalls);
  }

  /** calls running, including those past their deadline */
  get busy(): number {
    return this.slots.busy;
  }

  /** statfs(hostPath) within the deadline; never rejects with a timeout, rejects with the call's own error. */
  async statfs(fs: HostFs, hostPath: string): Promise<Timed<StatsFs | null>> {
    return this.run(hostPath, () => fs.statfs(hostPath));
  }

  async run<T>(key: string, call: () => Promise<T>): Promise<Timed<T>> {
    const pending = this.out.get(key);
    if (pending !== undefined) return this.note(key, { ok: false, reason: `statfs has not returned since ${new Date(pending).toISOString()} (the mount does not answer)`, since: new Date(pending).toISOString(), outstanding: true });
    const t0 = Date.now();
    const until = t0 + this.timeoutMs;
    if (!(await this.slots.acquire(until))) {
      return this.note(key, { ok: false, reason: `no free statfs slot within ${this.timeoutMs} ms (${this.out.size} mounts not answering)`, since: new Date(t0).toISOString(), outstanding: false });
    }
    this.out.set(key, t0);
    const op = (async () => call())();
    // the slot and the path's "still out" mark go only when the call itself returns, however late
    const settled = () => {
      if (this.out.get(key) === t0) this.out.delete(key);
      this.slots.release();
    };
    op.then(settled, settled);
    const o = await withinDeadline(op, until - Date.now(), 'statfs');
    if (o.ok) return this.note(key, { ok: true, value: o.value, ms: o.ms });
    if (o.timedOut) return this.note(key, { ok: false, reason: `statfs did not return within ${this.timeoutMs} ms`, since: new Date(t0).toISOString(), outstanding: true });
    throw o.cause;
  }

  /** The last answer for each path asked, in the order first asked. */
  answers(): MountAnswer[] {
    return [...this.seen.values()];
  }

  /** paths whose call has not returned */
  get notAnswering(): number {
    return this.out.size;
  }

  private note<T>(key: string, r: Timed<T>): Timed<T> {
    // bounded: the agent statfs's a fixed set of paths, but keep the table small whatever asks
    if (!this.seen.has(key) && this.seen.size >= 64) this.seen.delete(this.seen.keys().next().value!);
    this.seen.set(key, r.ok ? { path: key, answered: true, ms: r.ms } : { path: key, answered: false, reason: r.reason, since: r.since, outstanding: r.outstanding });
    return r;
  }

}

/** The agent's one box (libuv's pool is per process). */
export const statfsBox = new StatfsBox();

/** For /readyz-like reports: mounts that do not answer. */
export function statfsReadiness(b: StatfsBox = statfsBox): { ok: boolean; detail: string } {
  const stuck = b.answers().filter((a) => !a.answered);
  if (b.notAnswering > 0) return { ok: false, detail: `${b.notAnswering} statfs calls not returned: ${stuck.map((a) => a.path).join(', ')}` };
  return { ok: true, detail: 'every statfs answered' };
}
