/**
 * User patterns (`pattern=` of /v1/kernel and of file queries of /v1/logs),
 * matched in linear time with RE2 syntax (re2js, a pure-JS port of RE2).
 *
 * It lives in lib/ because two sources use it (kmsg and the /var/log file
 * reader); it knows nothing of HTTP: refusals are SourceErrors (bad_parameter, busy).
 *
 * Why a worker thread: RE2 semantics make a match linear in the text, but
 * re2js's constant is not small. Measured on this 2-core machine, a hostile
 * pattern on a hostile line defeats its DFA and falls back to the NFA at
 * 10–40 µs per character: `(?i).*a.{100}q` over a 64 KiB line of random a/X
 * took ~600 ms for ONE test() call, and compiling a 1 KiB pattern of counted
 * repetitions (100k instructions) took ~120 ms. A single call cannot be
 * interrupted, so time-slicing on the event loop cannot bound it. All re2js
 * work (compiling and matching) therefore runs in a small pool of worker
 * threads; the event loop only cuts the texts into batches (bounded chars),
 * posts them, and awaits. A batch that overruns the request's matching budget,
 * or whose request went away, gets its worker terminated: no CPU is left
 * burning for a request that has ended.
 *
 * Journal queries keep journalctl's PCRE2 `--grep` in its child process; this
 * module is for the texts the agent itself holds.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { badParameter, SourceError } from '../readers/errors.js';

export const PATTERN_LIMITS = {
  /** characters of a pattern */
  maxLength: 1024,
  /** a text (a log line, a kernel record) is matched over its first this many characters */
  maxMatchChars: 64 * 1024,
  /** characters posted to a worker in one batch (the structured clone runs on the event loop) */
  batchChars: 1024 * 1024,
  /** items in one batch */
  batchItems: 8192,
  /** total worker time one filter call may use before it stops with a warning */
  budgetMs: 10_000,
  /** a compile that takes longer than this is refused (re2js compiles ~1 µs per instruction) */
  compileMs: 2_000,
  /** worker threads (the machine has 2 cores) */
  workers: 2,
  /** jobs waiting for a worker before new ones are refused as busy (429) */
  maxQueued: 64,
} as const;

const RE2_SYNTAX = 'the syntax is RE2 (linear-time matching; https://github.com/google/re2/wiki/Syntax)';

export interface FilterOptions {
  /** stop after this many matches */
  limit?: number | null;
  /** search from the last item backwards (a tail: the newest matches first found) */
  fromEnd?: boolean;
  signal?: AbortSignal | undefined;
  /** override PATTERN_LIMITS.budgetMs (tests) */
  budgetMs?: number;
}

export interface FilterResult<T> {
  /** the matching items, in input order */
  items: T[];
  /** what a reader must know: lines matched only over their first maxMatchChars, a search stopped early */
  warnings: string[];
  /** true when not every item was searched (budget exhausted, or aborted) */
  incomplete: boolean;
}

export interface UserPattern {
  readonly source: string;
  /** journalctl's smart case: no capital letter outside escapes → case-insensitive */
  readonly caseInsensitive: boolean;
  /** RE2's cost measure of the compiled program */
  readonly programSize: number;
  /** Does this one text match (over its first maxMatchChars)? */
  test(text: string, signal?: AbortSignal): Promise<boolean>;
  /** The items whose text matches, matched off the event loop within a time budget. */
  filter<T>(items: readonly T[], text: (item: T) => string, opts?: FilterOptions): Promise<FilterResult<T>>;
}

// re2js flag values (RE2JS.CASE_INSENSITIVE); the main thread never loads re2js itself
const CASE_INSENSITIVE = 1;

/**
 * Compile a user pattern: length bound, smart case, RE2 syntax. Unsupported
 * constructs (backreferences, lookaround, possessive and atomic groups) are a
 * bad_parameter naming the construct and saying the syntax is RE2.
 */
export async function compileUserPattern(p: string, param = 'pattern'): Promise<UserPattern> {
  if (p.length > PATTERN_LIMITS.maxLength) throw badParameter(param, `${param}: longer than ${PATTERN_LIMITS.maxLength} characters`);
  if (p.includes('\0')) throw badParameter(param, `${param}: NUL is not allowed`);
  const caseInsensitive = !hasCapitalOutsideEscapes(p);
  const flags = caseInsensitive ? CASE_INSENSITIVE : 0;
  const r = await pool.run({ op: 'compile', source: p, flags }, PATTERN_LIMITS.compileMs);
  if (r.kind === 'timeout') throw badParameter(param, `${param}: too complex to compile within ${PATTERN_LIMITS.compileMs} ms (lower the counted repetitions {n,m})`);
  if (r.kind === 'aborted') throw badParameter(param, `${param}: compile was interrupted`);
  if (r.reply.error !== undefined) {
    const what = unsupportedConstruct(p);
    const detail = what ? `${what} not supported: ${RE2_SYNTAX}` : `${r.reply.error}; ${RE2_SYNTAX}`;
    throw badParameter(param, `${param}: ${detail}`);
  }
  const programSize = r.reply.programSize ?? 0;
  const self: UserPattern = {
    source: p,
    caseInsensitive,
    programSize,
    async test(text, signal) {
      const res = await self.filter([text], (s) => s, { signal });
      return res.items.length === 1;
    },
    filter: (items, text, opts = {}) => filterItems(p, flags, items, text, opts),
  };
  return self;
}

/**
 * Smart case: journalctl goes case-insensitive unless `[[:upper:]]` matches
 * anywhere in the pattern, so even `\S+` turns it case-sensitive. Here a
 * letter that is part of an escape (`\S`, `\W`, `\pL`, `\p{Greek}`,
 * `\x{1F600}`) or of a group name is syntax, not text, and does not count:
 * `\S+ killed` still matches "KILLED". Under case folding `\p{Lu}` matches
 * any cased letter (RE2); `(?-i)` asks for case explicitly.
 */
export function hasCapitalOutsideEscapes(p: string): boolean {
  const upper = /\p{Lu}/u;
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '\\') {
      const n = p[i + 1];
      if ((n === 'p' || n === 'P' || n === 'x') && p[i + 2] === '{') {
        const end = p.indexOf('}', i + 3);
        i = end < 0 ? p.length : end;
      } else if ((n === 'p' || n === 'P') && p[i + 2] !== undefined) {
        i += 2; // \pL
      } else if (n === 'x') {
        i += 3; // \xHH
      } else if (n === 'Q') {
        // \Q...\E is literal text: its letters count
        const end = p.indexOf('\\E', i + 2);
        const lit = p.slice(i + 2, end < 0 ? p.length : end);
        if (upper.test(lit)) return true;
        i = end < 0 ? p.length : end + 1;
      } else {
        i += 1;
      }
      continue;
    }
    if (c === '(' && p[i + 1] === '?') {
      // (?P<Name>…) and (?<Name>…): the name is syntax
      const m = /^\(\?P?<([A-Za-z0-9_]*)>/.exec(p.slice(i, i + 2 + 3 + 256));
      if (m) {
        i += m[0].length - 1;
        continue;
      }
    }
    if (upper.test(c)) return true;
  }
  return false;
}

/** Name what RE2 does not support, for the refusal's detail; null when it is some other syntax error. */
export function unsupportedConstruct(p: string): string | null {
  const checks: Array<[RegExp, string]> = [
    [/\\[1-9]|\\k[<{']|\\g\{?-?\d/, 'backreferences (\\1, \\k<name>) are'],
    [/\(\?<[=!]/, 'lookbehind ((?<=…), (?<!…)) is'],
    [/\(\?[=!]/, 'lookahead ((?=…), (?!…)) is'],
    [/\(\?>/, 'atomic groups ((?>…)) are'],
    [/[*+?}]\+/, 'possessive quantifiers (*+, ++, ?+) are'],
    [/\(\?(?:R|\d|&)/, 'recursion ((?R), (?1)) is'],
    [/\(\?#/, 'comments ((?#…)) are'],
  ];
  // the pattern is at most maxLength characters and these expressions have no nested quantifiers
  for (const [re, what] of checks) if (re.test(p)) return what;
  return null;
}

async function filterItems<T>(source: string, flags: number, items: readonly T[], text: (item: T) => string, opts: FilterOptions): Promise<FilterResult<T>> {
  const limit = opts.limit ?? Infinity;
  const hits: number[] = [];
  const warnings: string[] = [];
  let cut = 0;
  let incomplete = false;
  const deadline = Date.now() + (opts.budgetMs ?? PATTERN_LIMITS.budgetMs);
  const n = items.length;
  let k = 0; // items taken so far, in search order
  while (k < n && hits.length < limit) {
    if (opts.signal?.aborted) {
      incomplete = true;
      break;
    }
    // one batch: bounded by characters and items, so posting it is a short stretch of the event loop
    const idx: number[] = [];
    const parts: string[] = [];
    const ends: number[] = [];
    let chars = 0;
    while (k < n && idx.length < PATTERN_LIMITS.batchItems && chars < PATTERN_LIMITS.batchChars) {
      const i = opts.fromEnd ? n - 1 - k : k;
      k++;
      let s = text(items[i]!);
      if (s.length > PATTERN_LIMITS.maxMatchChars) {
        s = s.slice(0, PATTERN_LIMITS.maxMatchChars);
        cut++;
      }
      idx.push(i);
      parts.push(s);
      chars += s.length;
      ends.push(chars);
    }
    const r = await pool.run({ op: 'match', source, flags, text: parts.join(''), ends }, deadline - Date.now(), opts.signal);
    if (r.kind !== 'done') {
      incomplete = true;
      if (r.kind === 'timeout') {
        const searched = k - idx.length;
        warnings.push(
          `pattern: the search stopped after ${opts.budgetMs ?? PATTERN_LIMITS.budgetMs} ms with ${searched} of ${n} ${opts.fromEnd ? 'newest ' : ''}items searched; the rest were not searched (a simpler pattern searches further)`,
        );
      }
      break;
    }
    if (r.reply.error !== undefined) throw new Error(`pattern worker: ${r.reply.error}`);
    for (const j of r.reply.hits ?? []) {
      if (hits.length >= limit) break;
      hits.push(idx[j]!);
    }
  }
  if (cut > 0) {
    warnings.unshift(`pattern: ${cut} item(s) longer than ${PATTERN_LIMITS.maxMatchChars} characters were matched over their first ${PATTERN_LIMITS.maxMatchChars} characters only`);
  }
  hits.sort((a, b) => a - b);
  return { items: hits.map((i) => items[i]!), warnings, incomplete };
}

// ---- the worker pool ----

type Job = { op: 'compile'; source: string; flags: number } | { op: 'match'; source: string; flags: number; text: string; ends: number[] };
interface Reply {
  id: number;
  error?: string;
  programSize?: number;
  hits?: number[];
}
type RunResult = { kind: 'done'; reply: Reply } | { kind: 'timeout' } | { kind: 'aborted' };

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

class PatternPool {
  private readonly idle: Worker[] = [];
  private live = 0;
  private nextId = 1;
  private readonly waiting: Array<() => void> = [];
  private re2jsPath: string | null = null;

  async run(job: Job, timeoutMs: number, signal?: AbortSignal): Promise<RunResult> {
    if (signal?.aborted) return { kind: 'aborted' };
    if (timeoutMs <= 0) return { kind: 'timeout' };
    const w = await this.acquire(signal);
    if (!w) return { kind: 'aborted' };
    const id = this.nextId++;
    return new Promise<RunResult>((resolve) => {
      let settled = false;
      const finish = (r: RunResult, healthy: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        w.off('message', onMessage);
        w.off('error', onError);
        w.off('exit', onExit);
        this.release(w, healthy);
        resolve(r);
      };
      const onMessage = (m: Reply) => {
        if (m.id === id) finish({ kind: 'done', reply: m }, true);
      };
      // a worker stuck in one long match cannot be interrupted: terminate it, a new one starts on demand
      const onAbort = () => finish({ kind: 'aborted' }, false);
      const onError = (err: Error) => finish({ kind: 'done', reply: { id, error: err.message } }, false);
      const onExit = () => finish({ kind: 'done', reply: { id, error: 'the pattern worker exited' } }, false);
      const timer = setTimeout(() => finish({ kind: 'timeout' }, false), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
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
      if (this.live < PATTERN_LIMITS.workers) {
        this.live++;
        return this.spawn(signal);
      }
      if (this.waiting.length >= PATTERN_LIMITS.maxQueued) throw new SourceError('busy', `pattern: ${this.waiting.length} searches are already waiting for a matcher; retry later`, { retryAfterSeconds: 1 });
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

const pool = new PatternPool();
