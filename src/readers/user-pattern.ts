/**
 * User patterns (lib/pattern.ts) as the readers use them: a pattern's refusal is a
 * SourceError with the same code (bad_parameter, busy), so it answers from the one table.
 */
import { compileUserPattern as compile, PatternRefusal, type UserPattern } from '../lib/pattern.js';
import { SourceError } from './errors.js';

export type { UserPattern };

function asSourceError(err: unknown): never {
  if (err instanceof PatternRefusal) {
    throw new SourceError(err.kind, err.message, { param: err.param, retryAfterSeconds: err.retryAfterSeconds });
  }
  throw err;
}

/** lib/pattern's compileUserPattern, its refusals and those of its matches SourceErrors. */
export async function compileUserPattern(p: string, param = 'pattern'): Promise<UserPattern> {
  const up = await compile(p, param).catch(asSourceError);
  return {
    source: up.source,
    caseInsensitive: up.caseInsensitive,
    programSize: up.programSize,
    test: (text, signal) => up.test(text, signal).catch(asSourceError),
    filter: (items, text, opts) => up.filter(items, text, opts).catch(asSourceError),
  };
}
