/**
 * One moment of the node, as a capture (src/bundle/capture.ts) takes it.
 *
 * DESIGN.md: a cache may hold only what cannot have changed, and concurrent
 * identical requests may share one computation. A capture is one moment by
 * definition (its manifest says "captured between capturedAt and finishedAt"),
 * so within it every shared read — each SingleFlight key: the runtime's lists,
 * the kubepods walk, a container's status, the cgroup mode — is made once and
 * every answer of the capture is built from it. Without this each per-container
 * route re-lists the runtime and re-walks every cgroup, and a capture costs the
 * square of the node (bench/RESULTS.md, "Node bundle capture").
 *
 * The moment travels by AsyncLocalStorage: it reaches exactly the work started
 * inside `run` (the capture's app.inject calls and everything they await), never a
 * request that came over a socket, and nothing a client sends can enter, leave or
 * name one. What it keeps is dropped at `end`; work that outlives it sees no moment.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const current = new AsyncLocalStorage<Moment>();

export class Moment {
  readonly from = new Date();
  to: Date | null = null;
  /** requests answered inside it (app.inject): their own audit lines are left out, the capture's request or command writes one */
  requests = 0;
  private memo: WeakMap<object, Map<string, Promise<unknown>>> | null = new WeakMap();

  /** The moment the calling code runs in, if one is open. */
  static current(): Moment | undefined {
    const m = current.getStore();
    return m?.memo ? m : undefined;
  }

  run<T>(fn: () => T): T {
    return current.run(this, fn);
  }

  /** `fn`'s promise for (owner, key), made once within this moment (its rejection too: a wedged runtime costs one deadline, not one per answer). */
  once<T>(owner: object, key: string, fn: () => Promise<T>): Promise<T> {
    if (!this.memo) return fn();
    let byKey = this.memo.get(owner);
    if (!byKey) this.memo.set(owner, (byKey = new Map()));
    const hit = byKey.get(key);
    if (hit) return hit as Promise<T>;
    const p = fn();
    byKey.set(key, p);
    return p;
  }

  /** Close it: nothing more is shared, everything kept is let go. */
  end(): void {
    this.memo = null;
    this.to = new Date();
  }
}
