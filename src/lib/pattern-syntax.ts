/**
 * The syntax side of user patterns (lib/pattern.ts), pure: journalctl's smart case, and
 * the name of a construct RE2 does not support for a refusal's detail.
 */

export const RE2_SYNTAX = 'the syntax is RE2 (linear-time matching; https://github.com/google/re2/wiki/Syntax)';

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
