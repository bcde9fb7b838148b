/**
 * One reading of the node (DESIGN.md "One reading of the node"): the node as its sources
 * answered at one moment. Inside a reading each shared read (a SingleFlight key: the runtime's
 * lists, a container's status, the kubepods walk, a scrape, a rendered answer) is made once.
 * It travels by AsyncLocalStorage (lib/concurrency.ts memoScope) to exactly the work started in
 * `run`; nothing a client sends can enter or name one. `release` lets go of what it kept; work
 * that outlives it shares in flight instead.
 *
 * `Readings` gives a request the newest reading begun at most `maxAgeMs` before the request
 * arrived, else a new one (0: one begun after it arrived). A reading is released once no request
 * holds it and none may get it any more (older than maxAgeMs, or replaced): an idle agent holds
 * none, and its one timer (unref'd) exists only while an unheld reading waits to expire. Ages are
 * on the monotonic clock: a wall clock set back must not keep a reading for good.
 *
 * `watch` hears when the agent goes idle (its last reading released) and busy again (a reading
 * made after that): what a reading read is garbage from that moment (src/server/plugins/idle-gc.ts).
 */
import { performance } from 'node:perf_hooks';
import { type Memo, memoScope } from './lib/concurrency.js';

export class Reading implements Memo {
  /** every answer built from it states this as `observedAt` */
  readonly startedAt = new Date();
  /** the same instant, performance.now() ms */
  readonly began = performance.now();
  /** requests a capture injected and answered from it (audited as the capture's one line) */
  requests = 0;
  /** requests using it now */
  holders = 0;
  private memo: WeakMap<object, Map<string, Promise<unknown>>> | null = new WeakMap();

  /** `capture`: a capture's reading */
  constructor(readonly capture = false) {}

  /** The open reading the calling code runs in, if any. */
  static current(): Reading | undefined {
    const m = memoScope.getStore();
    return m instanceof Reading && m.open ? m : undefined;
  }

  get open(): boolean {
    return this.memo !== null;
  }

  run<T>(fn: () => T): T {
    return memoScope.run(this, fn);
  }

  /** `fn`'s promise for (owner, key), made once within this reading (a rejection too). */
  once<T>(owner: object, key: string, fn: () => Promise<T>): Promise<T> {
    if (!this.memo) return fn();
    let byKey = this.memo.get(owner);
    if (!byKey) this.memo.set(owner, (byKey = new Map()));
    let p = byKey.get(key) as Promise<T> | undefined;
    if (!p) byKey.set(key, (p = fn()));
    return p;
  }

  /** Whether (owner, key) was made, or is being made, in this reading. */
  has(owner: object, key: string): boolean {
    return this.memo?.get(owner)?.has(key) ?? false;
  }

  /** Forget (owner, key) if it is still `p`: the next `once` makes it again. */
  forget(owner: object, key: string, p: Promise<unknown>): void {
    const byKey = this.memo?.get(owner);
    if (byKey?.get(key) === p) byKey.delete(key);
  }

  release(): void {
    this.memo = null;
  }
}

interface IdleWatch {
  idle(): void;
  busy(): void;
}

export class Readings {
  watch: IdleWatch | null = null;
  private newest: Reading | null = null;
  private timer: NodeJS.Timeout | null = null;
  private live = 0;

  constructor(readonly maxAgeMs: number) {}

  /** The reading `enter(arrivedAt)` would give without making one, if any. */
  peek(arrivedAt: number): Reading | null {
    const r = this.newest;
    return r && r.open && r.began >= arrivedAt - this.maxAgeMs ? r : null;
  }

  /** The reading of a request that arrived at `arrivedAt` (performance.now() ms), held until `leave`. */
  enter(arrivedAt: number): Reading {
    let r = this.peek(arrivedAt);
    if (!r) {
      if (this.newest && this.newest.holders === 0) this.drop(this.newest);
      r = this.newest = new Reading();
      if (++this.live === 1) this.watch?.busy();
    }
    r.holders++;
    return r;
  }

  leave(r: Reading): void {
    if (--r.holders > 0) return;
    if (r === this.newest) return this.expire();
    this.drop(r);
    this.idleNow();
  }

  /** Readings not released yet: 0 on an idle agent. */
  get open(): number {
    return this.live;
  }

  /** not from `enter`, which drops the newest only to make the next one */
  private idleNow(): void {
    if (this.live === 0) this.watch?.idle();
  }

  private drop(r: Reading): void {
    if (!r.open) return;
    r.release();
    this.live--;
  }

  private expire(): void {
    const r = this.newest;
    if (!r || r.holders > 0 || this.timer) return;
    const left = r.began + this.maxAgeMs - performance.now();
    if (left <= 0) {
      this.drop(r);
      this.newest = null;
      this.idleNow();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.expire();
    }, Math.ceil(left)).unref();
  }
}
