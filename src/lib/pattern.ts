/**
 * User patterns (`pattern=` of /v1/kernel and of file queries of /v1/logs),
 * matched in linear time with RE2 syntax (re2js, a pure-JS port of RE2).
 *
 * It lives in lib/ because two sources use it (kmsg and the /var/log file
 * reader); it knows nothing of them nor of HTTP: refusals are PatternRefusals
 * (bad_parameter, busy), which the readers turn into their own errors.
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
import { PatternPool } from './pattern-pool.js';
import { hasCapitalOutsideEscapes, RE2_SYNTAX, unsupportedConstruct } from './pattern-syntax.js';

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

/** Why a pattern is not used: the pattern itself (`bad_parameter`, `param` names it) or every matcher taken (`busy`). */
export class PatternRefusal extends Error {
  constructor(
    readonly kind: 'bad_parameter' | 'busy',
    message: string,
    readonly param: string | undefined,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'PatternRefusal';
  }
}

const badParameter = (param: string, detail: string) => new PatternRefusal('bad_parameter', `${param}: ${detail}`, param);

interface FilterOptions {
  /** stop after this many matches */
  limit?: number | null;
  /** search from the last item backwards (a tail: the newest matches first found) */
  fromEnd?: boolean;
  signal?: AbortSignal | undefined;
  /** override PATTERN_LIMITS.budgetMs (tests) */
  budgetMs?: number;
}

interface FilterResult<T> {
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
  if (p.length > PATTERN_LIMITS.maxLength) throw badParameter(param, `longer than ${PATTERN_LIMITS.maxLength} characters`);
  if (p.includes('\0')) throw badParameter(param, 'NUL is not allowed');
  const caseInsensitive = !hasCapitalOutsideEscapes(p);
  const flags = caseInsensitive ? CASE_INSENSITIVE : 0;
  const r = await pool.run({ op: 'compile', source: p, flags }, PATTERN_LIMITS.compileMs);
  if (!r.ok && r.timedOut) throw badParameter(param, `too complex to compile within ${PATTERN_LIMITS.compileMs} ms (lower the counted repetitions {n,m})`);
  // a worker that failed compiling this pattern (its memory limit): the pattern is what it could not take
  const error = r.ok ? r.value.error : r.error;
  if (error !== undefined) {
    const what = unsupportedConstruct(p);
    throw badParameter(param, what ? `${what} not supported: ${RE2_SYNTAX}` : `${error}; ${RE2_SYNTAX}`);
  }
  const programSize = r.ok ? (r.value.programSize ?? 0) : 0;
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
    if (!r.ok && (r.timedOut || opts.signal?.aborted)) {
      incomplete = true;
      if (r.timedOut) {
        const searched = k - idx.length;
        warnings.push(
          `pattern: the search stopped after ${opts.budgetMs ?? PATTERN_LIMITS.budgetMs} ms with ${searched} of ${n} ${opts.fromEnd ? 'newest ' : ''}items searched; the rest were not searched (a simpler pattern searches further)`,
        );
      }
      break;
    }
    const reply = r.ok ? r.value : { error: r.error, hits: [] };
    if (reply.error !== undefined) throw new Error(`pattern worker: ${reply.error}`);
    for (const j of reply.hits ?? []) {
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

const pool = new PatternPool({
  workers: PATTERN_LIMITS.workers,
  maxQueued: PATTERN_LIMITS.maxQueued,
  busy: (waiting) => new PatternRefusal('busy', `pattern: ${waiting} searches are already waiting for a matcher; retry later`, undefined, 1),
});
