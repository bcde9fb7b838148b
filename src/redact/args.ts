/** Secrets of command lines (see the policy in src/redact.ts), argument by argument. */
import { ASSIGN_NAME, FLAG_NAME, HEADER_NAME, REDACTED, SECRET_FLAG, SECRET_KEY, SHELL_SEPARATORS, type Tool, TOOLS } from '../rules/redaction.js';
import { redactText } from './text.js';

/**
 * `Authorization: Bearer x` → `Authorization: <redacted>`; null when `s` is not a
 * secret header. The flag says the value is still to come (`Authorization:` alone:
 * a shell split the header, its value is the next word).
 */
function redactHeader(s: string): [string, boolean] | null {
  const colon = s.indexOf(':');
  if (colon <= 0 || s.startsWith('//', colon + 1)) return null;
  let n = 0;
  while (s[n] === '"' || s[n] === "'") n++; // a header quoted inside a script
  const name = s.slice(n, colon).trimEnd();
  if (!HEADER_NAME.test(name) || !SECRET_KEY.test(name)) return null;
  let v = colon + 1;
  while (v < s.length && (s[v] === ' ' || s[v] === '\t')) v++;
  if (v === s.length) return [s, true];
  // `"Authorization: Bearer x"` split by a shell into words: the token is the next word
  return [`${s.slice(0, v)}${REDACTED}`, /^(bearer|basic)$/i.test(s.slice(v, v + 7))];
}

/** The argument after `-H`, or the text after `-H` / `--header=`. */
function headerArg(s: string, tx: Text): [string, Pending] {
  const h = redactHeader(s);
  return h === null ? [tx(s), 'none'] : [h[0], h[1] ? 'value' : 'none'];
}

/** curl's `-u user:password` → `user:<redacted>`; `1000:1000` (uid:gid, docker's -u) stays. */
function redactUserPass(s: string, tx: Text): string {
  const colon = s.indexOf(':');
  if (colon < 0 || /^\d+:\d+$/.test(s)) return tx(s);
  return `${s.slice(0, colon)}:${REDACTED}`;
}

type Pending = 'none' | 'value' | 'header' | 'user';

const toolOf = (w: string): Tool | undefined => (w.length <= 256 ? TOOLS.get(w.slice(w.lastIndexOf('/') + 1)) : undefined);

/** What the arguments before this one said: a value still to come, and the tool being run. */
interface ArgState {
  pending: Pending;
  tool: Tool | null;
}
export const argState = (): ArgState => ({ pending: 'none', tool: null });

/**
 * The text rules for one argument: a top-level argument gets them; a word inside a
 * script does not, the script gets them once as a whole (see redactWords).
 */
type Text = (s: string) => string;
const keep: Text = (s) => s;

/** One argument given the state the previous ones left (updated in place); returns the redacted argument. `words`: a top-level argument (not a word of a script). */
export function redactArg(a: string, st: ArgState, words: boolean): string {
  if (st.pending === 'none') {
    if (SHELL_SEPARATORS.has(a)) {
      st.tool = null;
      return a;
    }
    const tool = toolOf(a);
    if (tool !== undefined) {
      st.tool = tool;
      return a;
    }
    if (st.tool !== null) {
      const r = toolArg(a, st);
      if (a.endsWith(';')) st.tool = null;
      if (r !== null) return r;
    }
  }
  const [r, next] = redactPlainArg(a, st.pending, words, words ? redactText : keep);
  st.pending = next;
  return r;
}

/** An argument of a known tool (see TOOLS); null when the general rules decide. */
function toolArg(a: string, st: ArgState): string | null {
  switch (st.tool) {
    case 'redis':
      if (a !== '-a') return null;
      st.pending = 'value';
      return a;
    case 'sshpass':
    case 'registry-login':
      if (a !== '-p') return null;
      st.pending = 'value';
      return a;
    case 'registry':
    case 'vault':
      if (a === 'login') st.tool = st.tool === 'vault' ? 'vault-login' : 'registry-login';
      return null;
    case 'vault-login':
      // the token is the first positional word; `-method=x` flags and `username=x` pairs are not it
      if (a.startsWith('-') || a.includes('=')) return null;
      st.tool = null;
      return REDACTED;
    default:
      return null;
  }
}

/** One argument by the general rules, given what the previous one left; returns the redacted argument and the next state. */
function redactPlainArg(a: string, pending: Pending, words: boolean, tx: Text): [string, Pending] {
  if (pending === 'value') return /^["']?(bearer|basic)$/i.test(a) ? [a, 'value'] : [REDACTED, 'none']; // `Bearer x` split in two
  if (pending === 'header') return headerArg(a, tx);
  if (pending === 'user') return [redactUserPass(a, tx), 'none'];
  if (a.startsWith('-')) {
    if (a === '-H' || a === '--header' || a === '--proxy-header') return [a, 'header'];
    if (a === '-u' || a === '--user' || a === '-U' || a === '--proxy-user') return [a, 'user'];
    if (a.startsWith('--header=') || a.startsWith('--proxy-header=')) {
      const eq = a.indexOf('=') + 1;
      const [r, next] = headerArg(a.slice(eq), tx);
      return [a.slice(0, eq) + r, next];
    }
    if (a.startsWith('-H') && a.length > 2) {
      const [r, next] = headerArg(a.slice(2), tx);
      return [`-H${r}`, next];
    }
    if (a.startsWith('--user=') || a.startsWith('--proxy-user=')) {
      const eq = a.indexOf('=') + 1;
      return [a.slice(0, eq) + redactUserPass(a.slice(eq), tx), 'none'];
    }
    const eq = a.indexOf('=');
    const name = eq < 0 ? a : a.slice(0, eq);
    // mysql's -pSECRET: the password is attached, and may hold anything ('=',
    // "token"); a bare -p prompts, and the next argument is the database. Go's
    // single-dash `-password x` looks the same, so when the text looks like a
    // secret flag the next argument goes too. Also catches `mkdir -pv` and
    // `-port=80`: a cosmetic loss, where the other way leaks.
    if (a.startsWith('-p') && !a.startsWith('--') && a.length > 2) return [`-p${REDACTED}`, eq < 0 && SECRET_FLAG.test(a) ? 'value' : 'none'];
    if (FLAG_NAME.test(name) && SECRET_FLAG.test(name)) return eq < 0 ? [a, 'value'] : [`${name}=${REDACTED}`, 'none'];
    return [tx(a), 'none'];
  }
  const eq = a.indexOf('=');
  if (eq > 0 && ASSIGN_NAME.test(a.slice(0, eq)) && SECRET_KEY.test(a.slice(0, eq))) return [`${a.slice(0, eq)}=${REDACTED}`, 'none'];
  const h = redactHeader(a); // httpie-style `Authorization:Bearer x`, or a header a shell split
  if (h !== null) return [h[0], h[1] ? 'value' : 'none'];
  if (words && /\s/.test(a)) return [redactWords(a), 'none'];
  if (/^["']?(bearer|basic)$/i.test(a)) return [a, 'value'];
  return [tx(a), 'none'];
}

/** A shell script in one argument (`sh -c "mysql -uroot -pSECRET db"`): its words are arguments too. */
function redactWords(a: string): string {
  // A hand scan, not split(/(\s+)/): a 1 MiB script of one-letter words is
  // half a million words, and most need no look at all (plainWord).
  let out = '';
  let last = 0;
  const st = argState();
  let i = 0;
  while (i < a.length) {
    while (i < a.length && isSpace(a.charCodeAt(i))) i++;
    const start = i;
    while (i < a.length && !isSpace(a.charCodeAt(i))) i++;
    if (start === i) break;
    const w = a.slice(start, i);
    if (st.pending === 'none' && st.tool === null && plainWord(w) && toolOf(w) === undefined) continue;
    const r = redactArg(w, st, false);
    if (r !== w) {
      out += a.slice(last, start) + r;
      last = i;
    }
  }
  // the text rules over the whole: what spans words (a private-key block, a YAML line)
  return redactText(last > 0 ? out + a.slice(last) : a);
}

const isSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);

/** A word no argument rule and no text rule can change: no flag, no `=`, `:` or `@`, not `Bearer`. */
function plainWord(w: string): boolean {
  if (w.charCodeAt(0) === 45 /* - */) return false;
  if (w.length >= 5 && w.length <= 7 && /^["']?(bearer|basic)$/i.test(w)) return false;
  for (let i = 0; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (c === 58 /* : */ || c === 61 /* = */ || c === 64 /* @ */) return false;
  }
  return true;
}

/** Redact the secrets of a command line (see the policy above). */
export function redactArgs(args: string[]): string[] {
  const out: string[] = [];
  const st = argState();
  for (const arg of args) out.push(redactArg(arg, st, true));
  return out;
}
