/**
 * A guard for calls that may never return (a statfs of a hung mount, a /proc cmdline
 * read behind a locked memory map). Such a call holds one of libuv's pool threads in the
 * kernel, uninterruptibly, and Node cannot cancel it; when every thread is held, every
 * file read of the agent stops. The guard bounds that:
 *
 * - at most `max` calls at once; a slot is held until the call itself returns, even long
 *   past its caller's deadline, so hung calls can never take every thread;
 * - each caller waits for a slot and the call together at most `timeoutMs`, then gets a
 *   failed outcome and goes on (a request's signal ends the wait for a slot sooner);
 * - while `max` calls are stuck past their deadline, new calls are refused at once;
 * - a call given a `key` (a path) is not made again while that key's call is still out:
 *   the answer is "not returned since <time>" at once, so one hung mount costs one thread,
 *   not one per request;
 * - readiness: not ready while a call is stuck.
 */
import { type Outcome, withinDeadline } from './deadline.js';

type Failed = Extract<Outcome<never>, { ok: false }>;

/**
 * A guarded call's outcome: deadline.ts's Outcome, and on a failure when it began and
 * whether the call itself is still out (`outstanding`: slow, or hung if it stays out; false
 * when it was never made, for want of a slot, which says nothing about what it would have asked).
 */
export type Guarded<T> = Extract<Outcome<T>, { ok: true }> | (Failed & { since: number; outstanding: boolean });

/** The last outcome of a keyed call, without its value. */
type KeyAnswer = { key: string; ok: true; ms: number } | { key: string; ok: false; error: string; since: number; outstanding: boolean };

interface GuardOptions {
  /** the call, named in sentences: "statfs", "/proc cmdline read" */
  what: string;
  /** why one may hang, said when one does: "the mount does not answer" */
  hangsWhen: string;
  /** what the agent's answers lack while calls are stuck, for readiness */
  whileStuck: string;
  /** calls at once, including those past their deadline */
  max: number;
  /** how long a caller waits for a slot and the call together */
  timeoutMs: number;
}

/** keys whose last outcome is kept: callers ask a fixed set, but the table stays small whatever asks */
const MAX_KEYS = 64;

export class Guard {
  /** slots held: calls running, including those past their deadline */
  busy = 0;
  /** calls past their deadline that have not returned */
  stuck = 0;
  /** calls that ever missed their deadline */
  timedOut = 0;
  private readonly waiters: Array<() => void> = [];
  /** key → when its still-running call began */
  private readonly out = new Map<string, number>();
  private readonly last = new Map<string, KeyAnswer>();

  constructor(readonly o: GuardOptions) {}

  /** `call` in a slot within the deadline; never rejects (the call's own error is a failed outcome with it as `cause`). */
  async run<T>(call: () => Promise<T>, opts: { key?: string; signal?: AbortSignal | undefined } = {}): Promise<Guarded<T>> {
    const r = await this.attempt(call, opts.key, opts.signal);
    if (opts.key !== undefined) this.note(opts.key, r);
    return r;
  }

  /** The last outcome per key asked, in the order first asked. */
  answers(): KeyAnswer[] {
    return [...this.last.values()];
  }

  /** Not ready while a call is stuck past its deadline. */
  readiness(): { ok: boolean; detail: string } {
    const { what, hangsWhen, whileStuck, max, timeoutMs } = this.o;
    if (this.stuck > 0) {
      const late = Date.now() - timeoutMs;
      const keys = [...this.out].filter(([, t0]) => t0 <= late).map(([k]) => k);
      return { ok: false, detail: `${this.stuck} of ${max} ${what} calls stuck past ${timeoutMs} ms (${hangsWhen})${keys.length > 0 ? `: ${keys.join(', ')}` : ''}; ${whileStuck}` };
    }
    return { ok: true, detail: `${what} calls answering (${this.busy}/${max} slots in use, ${this.timedOut} timed out since start)` };
  }

  private async attempt<T>(call: () => Promise<T>, key: string | undefined, signal: AbortSignal | undefined): Promise<Guarded<T>> {
    const { what, hangsWhen, max, timeoutMs } = this.o;
    const t0 = Date.now();
    const failed = (error: string, since = t0, outstanding = false, timedOut = false): Guarded<T> => ({ ok: false, timedOut, error, cause: null, ms: Date.now() - t0, since, outstanding });
    const pending = key === undefined ? undefined : this.out.get(key);
    if (pending !== undefined) return failed(`${what} has not returned since ${new Date(pending).toISOString()} (${hangsWhen})`, pending, true);
    if (this.stuck >= max) return failed(`no free ${what} slot: all ${max} are held by calls stuck past ${timeoutMs} ms (${hangsWhen})`);
    const until = t0 + timeoutMs;
    if (!(await this.acquire(until, signal))) return failed(signal?.aborted ? 'the request ended' : `no free ${what} slot within ${timeoutMs} ms (${this.stuck} stuck)`);
    if (key !== undefined) this.out.set(key, t0);
    let state: 'running' | 'late' | 'returned' = 'running';
    const op = (async () => call())();
    // the slot and the key's "still out" mark go only when the call itself returns, however late
    const settled = () => {
      if (state === 'late') this.stuck--;
      state = 'returned';
      if (key !== undefined && this.out.get(key) === t0) this.out.delete(key);
      this.release();
    };
    op.then(settled, settled);
    const o = await withinDeadline(op, until - Date.now(), what);
    if (o.ok) return o;
    if (!o.timedOut) return { ...o, error: (o.cause as NodeJS.ErrnoException | null)?.code ?? o.error, since: t0, outstanding: false };
    if (state === 'running') {
      state = 'late';
      this.stuck++;
      this.timedOut++;
    }
    return failed(`${what} did not return within ${timeoutMs} ms (${hangsWhen})`, t0, state === 'late', true);
  }

  /** A slot by `until` (ms since the epoch): false when none came free by then or `signal` aborted. */
  private acquire(until: number, signal?: AbortSignal): Promise<boolean> {
    if (this.busy < this.o.max) {
      this.busy++;
      return Promise.resolve(true);
    }
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const stopWaiting = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', giveUp);
      };
      const grant = () => {
        stopWaiting();
        this.busy++;
        resolve(true);
      };
      const giveUp = () => {
        stopWaiting();
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(false);
      };
      const timer = setTimeout(giveUp, Math.max(1, until - Date.now()));
      signal?.addEventListener('abort', giveUp, { once: true });
      this.waiters.push(grant);
    });
  }

  /** Free a slot: the longest waiter gets it. */
  private release(): void {
    this.busy--;
    this.waiters.shift()?.();
  }

  private note<T>(key: string, r: Guarded<T>): void {
    if (!this.last.has(key) && this.last.size >= MAX_KEYS) this.last.delete(this.last.keys().next().value!);
    // a call that failed with its own error returned: the mount answered, with an error
    this.last.set(key, r.ok || (!r.outstanding && r.cause !== null) ? { key, ok: true, ms: r.ms } : { key, ok: false, error: r.error, since: r.since, outstanding: r.outstanding });
  }
}
