/**
 * The worker threads of lib/pattern.ts: every re2js compile and match runs here, off the
 * event loop, each job within its time (lib/deadline); a worker busy past it, or whose
 * request went away, is terminated, and a new one starts on demand.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { type Outcome, withinDeadline } from './deadline.js';

type Job = { op: 'compile'; source: string; flags: number } | { op: 'match'; source: string; flags: number; text: string; ends: number[] };
interface Reply {
  id: number;
  error?: string;
  programSize?: number;
  hits?: number[];
}

/**
 * The worker is plain CommonJS evaluated from this string, so it needs no
 * TypeScript loader (tests run under tsx, production from dist/) and loads
 * only re2js. Compiled patterns are cached by (flags, source), a few at most.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { RE2JS } = require(workerData.re2js);
parentPort.postMessage({ ready: true });
const cache = new Map();
function compiled(source, flags) {
  const key = flags + ':' + source;
  let re = cache.get(key);
  if (!re) {
    re = RE2JS.compile(source, flags);
    if (cache.size >= 8) cache.delete(cache.keys().next().value);
    cache.set(key, re);
  }
  return re;
}
parentPort.on('message', (job) => {
  try {
    const re = compiled(job.source, job.flags);
    if (job.op === 'compile') return parentPort.postMessage({ id: job.id, programSize: re.programSize() });
    const hits = [];
    let start = 0;
    for (let i = 0; i < job.ends.length; i++) {
      const end = job.ends[i];
      if (re.test(job.text.slice(start, end))) hits.push(i);
      start = end;
    }
    parentPort.postMessage({ id: job.id, hits });
  } catch (err) {
    parentPort.postMessage({ id: job.id, error: String((err && err.message) || err) });
  }
});
`;

interface PoolOptions {
  /** worker threads at most */
  workers: number;
  /** jobs waiting for a worker before new ones are refused */
  maxQueued: number;
  /** the refusal thrown then */
  busy: (waiting: number) => Error;
}

export class PatternPool {
  constructor(private readonly o: PoolOptions) {}

  private readonly idle: Worker[] = [];
  private live = 0;
  private nextId = 1;
  private readonly waiting: Array<() => void> = [];
  private re2jsPath: string | null = null;

  /**
   * `job` on a worker within `ms` (lib/deadline): the time starts once a worker is ready, and
   * a worker still busy at the deadline or when `signal` aborts is terminated. A worker that
   * fails is an answer with its `error`; an abort, a failure with the signal's reason.
   */
  async run(job: Job, ms: number, signal?: AbortSignal): Promise<Outcome<Reply>> {
    if (ms <= 0) return withinDeadline(new Promise<Reply>(() => {}), 0, 'pattern');
    const w = signal?.aborted ? null : await this.acquire(signal);
    if (!w) return withinDeadline(Promise.reject(new Error('the search was aborted')), ms, 'pattern');
    return withinDeadline((deadline) => this.exec(w, job, signal ? AbortSignal.any([deadline, signal]) : deadline), ms, 'pattern matching');
  }

  private exec(w: Worker, job: Job, signal: AbortSignal): Promise<Reply> {
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      let settled = false;
      const finish = (r: Reply | null, healthy: boolean) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        w.off('message', onMessage);
        w.off('error', onError);
        w.off('exit', onExit);
        this.release(w, healthy);
        if (r) resolve(r);
        else reject(new Error('the search was aborted'));
      };
      const onMessage = (m: Reply) => {
        if (m.id === id) finish(m, true);
      };
      // a worker stuck in one long match cannot be interrupted: terminate it, a new one starts on demand
      const onAbort = () => finish(null, false);
      const onError = (err: Error) => finish({ id, error: err.message }, false);
      const onExit = () => finish({ id, error: 'the pattern worker exited' }, false);
      signal.addEventListener('abort', onAbort, { once: true });
      w.on('message', onMessage);
      w.once('error', onError);
      w.once('exit', onExit);
      w.postMessage({ ...job, id });
    });
  }

  private async acquire(signal?: AbortSignal): Promise<Worker | null> {
    for (;;) {
      const w = this.idle.pop();
      if (w) return w;
      if (this.live < this.o.workers) {
        this.live++;
        return this.spawn(signal);
      }
      if (this.waiting.length >= this.o.maxQueued) throw this.o.busy(this.waiting.length);
      const ok = await new Promise<boolean>((resolve) => {
        const wake = () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(true);
        };
        const onAbort = () => {
          const i = this.waiting.indexOf(wake);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve(false);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        this.waiting.push(wake);
      });
      if (!ok) return null;
    }
  }

  private release(w: Worker, healthy: boolean): void {
    if (healthy) {
      this.idle.push(w);
    } else {
      this.live--;
      void w.terminate();
    }
    this.waiting.shift()?.();
  }

  /**
   * A new worker, once it has loaded re2js: a job's time budget starts only then, so a
   * starved CPU (a node VM under emulation, a loaded node) slows the start of a worker,
   * not a compile into a refusal. Null when the request went away or the worker died first.
   */
  private spawn(signal?: AbortSignal): Promise<Worker | null> {
    this.re2jsPath ??= createRequire(import.meta.url).resolve('re2js');
    // execArgv: [] — the worker needs none of the parent's flags or loaders
    const w = new Worker(WORKER_SOURCE, { eval: true, execArgv: [], workerData: { re2js: this.re2jsPath }, resourceLimits: { maxOldGenerationSizeMb: 128 } });
    w.unref(); // an idle matcher never keeps the process alive (SIGTERM ends the agent)
    w.on('error', () => {}); // reported to the job that was running; an idle worker's error only retires it
    w.once('exit', () => {
      const i = this.idle.indexOf(w);
      if (i >= 0) {
        this.idle.splice(i, 1);
        this.live--;
      }
    });
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        w.off('message', onReady);
        w.off('exit', onGone);
        signal?.removeEventListener('abort', onGone);
        if (ok) return resolve(w);
        this.release(w, false);
        resolve(null);
      };
      const onReady = (m: { ready?: boolean }) => {
        if (m.ready) done(true);
      };
      const onGone = () => done(false);
      w.on('message', onReady);
      w.once('exit', onGone);
      signal?.addEventListener('abort', onGone, { once: true });
    });
  }
}

