import { Moment } from './moment.js';

/** Map over items with at most `limit` promises in flight; keeps input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Concurrent identical requests share one computation (DESIGN.md): the first
 * caller starts it, the others await the same promise, and nothing is kept
 * once it settles, so every new request still sees the node as it is now.
 */
export class SingleFlight {
  private readonly inflight = new Map<string, Promise<unknown>>();

  do<T>(key: string, fn: () => Promise<T>): Promise<T> {
    // inside a capture's moment (lib/moment.ts) the first result is the moment's, shared by all its answers;
    // kept apart from the flights of clients' requests, which must never join work built from reads the
    // moment made earlier (DESIGN.md: an answer reflects the node at the moment of its request)
    const moment = Moment.current();
    return moment ? moment.once(this, key, fn) : this.share(key, fn);
  }

  private share<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const running = this.inflight.get(key);
    if (running) return running as Promise<T>;
    const p = fn().finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }
}

/** Wait `ms`, or less when `signal` aborts; never rejects (polling loops check the signal themselves). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
