import { AsyncLocalStorage } from 'node:async_hooks';

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

/** What work runs in: a reading of the node (src/reading.ts), which makes each (owner, key) once. */
export interface Memo {
  /** false once let go: work that outlives it shares in flight instead */
  readonly open: boolean;
  once<T>(owner: object, key: string, fn: () => Promise<T>): Promise<T>;
}

/** The memo the calling code runs in, carried by AsyncLocalStorage to exactly the work started inside it. */
export const memoScope = new AsyncLocalStorage<Memo>();

/**
 * One computation per key: inside a reading, made once for the whole reading (its rejection
 * too: a wedged runtime costs one deadline, not one per answer); outside one (background work,
 * auth reviews), concurrent callers share the promise in flight and nothing is kept once it settles.
 */
export class SingleFlight {
  private readonly inflight = new Map<string, Promise<unknown>>();

  do<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const memo = memoScope.getStore();
    return memo?.open ? memo.once(this, key, fn) : this.share(key, fn);
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
