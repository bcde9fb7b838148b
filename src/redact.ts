/**
 * Secret redaction, in one place. Applied to everything the runtime hands us
 * that may carry credentials (container env, OCI spec, annotations, labels,
 * command lines, verbose info) before it is returned or logged.
 *
 * Policy:
 * - every environment variable keeps its name; its value becomes REDACTED
 *   (values are configuration, and configuration is where secrets live);
 * - any value whose key looks like a credential is REDACTED whatever its type
 *   (string, number, array, object: containerd's registry headers are
 *   `{"Authorization": ["Basic …"]}`); only null and booleans stay, they hold
 *   nothing to hide;
 * - command lines: `--password=x` / `--token x` keep the flag and lose the
 *   value; so do mysql's `-pSECRET`, curl's `-H 'Authorization: …'` and
 *   `-u user:pw`, a positional `PASSWORD=x`, and the words of a shell script
 *   passed as one argument (`sh -c "mysql -pSECRET …"`);
 * - free text (journal records, container log lines, log files: redactLogText)
 *   loses only what is a secret by its shape, so normal log lines stay as they
 *   were: URL userinfo (`scheme://user:pw@host`, Go's `user:pw@tcp(host)`),
 *   secret-looking query parameters (`?access_token=…`), `Bearer <token>`,
 *   authorization headers (`Authorization: Basic …`, `X-Api-Key: …`),
 *   `password=…` / `"token": "…"` pairs whose name ends in a secret word, and
 *   PEM private-key blocks;
 * - strings inside documents and command lines (redactText) get those rules and,
 *   beside them, YAML-style `password: …` lines under any secret-looking key;
 * - command lines also know a few tools whose secret follows a short flag or a
 *   word: `redis-cli -a S`, `sshpass -p S`, `docker login -p S`, `vault login S`.
 *
 * Best effort: a list of shapes, not a proof. What it does not cover is said in
 * docs/security.md.
 *
 * Everything here is tenant-controlled input (pod authors set annotations, env
 * and args; kubelet hands them to the runtime), so every walk is bounded:
 * MAX_DEPTH levels of nesting, MAX_VALUES values and MAX_JSON_PARSE characters
 * of JSON parsed per call, MAX_JSON_TEXT characters per JSON-holding string.
 * Past a bound the sub-value is replaced by a marker saying why, never passed
 * through: a redacted result is never deeper than MAX_DEPTH, so serializing it
 * (fastify's serializer, JSON.stringify, both recursive) cannot blow the stack.
 * No regular expression here backtracks more than linearly (command-line
 * arguments reach 128 KiB and strings in verbose info megabytes).
 */
export const REDACTED = '<redacted>';

/** Containers (objects, arrays) nested deeper than this are replaced by a marker. */
export const MAX_DEPTH = 64;
/** Values visited per call (one pod's annotations, one verbose info document). */
export const MAX_VALUES = 100_000;
/** A JSON-holding string longer than this is not parsed: it is redacted whole. */
export const MAX_JSON_TEXT = 256 * 1024;
/** JSON text parsed per call, all strings together (parsing costs ~25 ms per MiB). */
export const MAX_JSON_PARSE = 512 * 1024;

const DEEP = `<redacted: nested deeper than ${MAX_DEPTH}>`;
const OVER = `<redacted: more than ${MAX_VALUES} values>`;
const bigJson = (n: number) => `<redacted: JSON text of ${n} characters, over the ${MAX_JSON_TEXT}-character parse bound>`;
const PARSE_BUDGET = `<redacted: JSON text past this document's ${MAX_JSON_PARSE}-character parse budget>`;

/** Keys whose values are treated as secrets wherever they appear (maps, documents, headers, query parameters). */
export const SECRET_KEY = /(pass(word|wd)?|secret|token|api[-_]?key|private[-_]?key|access[-_]?key|signing[-_]?key|credential|auth|cookie|session|bearer|signature|jwt|kubeconfig[-_]?data|(^|[-_.])creds?($|[-_.]))/i;

/**
 * Flag names whose value is a secret. Narrower than SECRET_KEY: `--session-timeout 30`
 * must not swallow the next argument; `--jwt-issuer` and `--incredible` name no secret.
 * Unanchored alternation of short literals and two end-anchored words: linear.
 */
const SECRET_FLAG = /pass(?:word|wd)?|secret|token|api[-_]?key|private[-_]?key|access[-_]?key|signing[-_]?key|credential|auth|kubeconfig[-_]?data|[-_.](?:jwt|creds?)$/i;
/** `-x`, `--some.flag-name`; anchored, one character class: linear. */
const FLAG_NAME = /^--?[A-Za-z0-9_.-]+$/;
/** A positional `NAME=value`'s name (env style, helm's `a.b[0].password`). */
const ASSIGN_NAME = /^[A-Za-z0-9_.[\]-]{1,256}$/;
/** A header's name (`Authorization`, `X-Api-Key`). */
const HEADER_NAME = /^[A-Za-z0-9_-]{1,128}$/;
const ENV_KEY = /^envs?$/i;
const ARGS_KEY = /^(args|command|cmd)$/i;

// Text rules. Each starts at a literal and has one unbounded run with nothing
// after it to fail against but one literal, so a scan is linear in the string.
/** `://userinfo@`: the run stops at `/`, so runs never overlap; greedy, it ends at the last `@`. */
const URL_USERINFO = /:\/\/([^\s/?#"'<>]*)@/g;
/** `?name=value`, `&name=value`, `;name=value` with a bounded name. */
const QUERY_PARAM = /([?&;])([A-Za-z0-9_.[\]-]{1,128})=([^&;#\s"'<>]*)/g;
/** `Bearer <token>`. */
const BEARER = /\b(bearer)(\s+)(?!(?:tokens?|auth(?:entication|orization)?|header|scheme)(?:[\s"'<>,;]|$))([^\s"'<>,;]+)/gi;
/**
 * An authorization header written out (`Authorization: Basic x`, JSON `"X-Api-Key":"x"`):
 * starts at a literal name; the first word, and a second when the first is a scheme.
 */
const AUTH_HEADER = /\b((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|x-access-token|private-token|x-vault-token)(["']?[ \t]*[:=][ \t]*["']?)([^\s"'<>,;]*)([ \t]+[^\s"'<>,;]+)?/gi;
const AUTH_SCHEME = /^(?:bearer|basic|digest|token|negotiate|apikey|key|hmac|aws4-hmac-sha256)$/i;
/**
 * A `name=value` or `"name": value` pair whose name ends in a secret word, found by
 * that word (a literal: text without one costs one scan); the rest of the name is
 * walked back by hand, the value scanned by hand. Narrow on purpose, for free text:
 * klog's `secret="ns/name"` names a Secret, it holds none.
 */
const PAIR_SECRET_AT = /(password|passwd|passphrase|token|secret[-_.]?key|client[-_.]?secret|api[-_.]?key|access[-_.]?key|private[-_.]?key|auth[-_.]?key|signing[-_.]?key|jwt)(["']?)[ \t]*([=:])[ \t]*/gi;
/** Go's DSN `user:password@tcp(host:3306)/db` (go-sql-driver/mysql): the `@proto(` is the literal found first. */
const GO_DSN_AT = /@(?:tcp[46]?|udp[46]?|unix|unixgram|unixpacket)\(/g;
/** A secret-looking word anywhere: where a YAML-style line may start being looked at. */
const SECRET_WORD = new RegExp(SECRET_KEY.source, 'gi');
/** One YAML-style line `  password: value` (`- password: value`, quoted keys): bounded indent and name. */
const YAML_LINE = /^([ \t]{0,64}(?:-[ \t]{1,8})?)(["']?)([A-Za-z0-9_.-]{1,128})\2([ \t]*:[ \t]+)([^\r]*)(\r?)$/;

/** `NAME=value` → `NAME=<redacted>`. */
export function redactEnvEntry(entry: string): string {
  const i = entry.indexOf('=');
  return i < 0 ? entry : `${entry.slice(0, i)}=${REDACTED}`;
}

/**
 * Free text: a journal record's message, a container's log line, a log file's line.
 * Only the shapes that are secrets by their form (see the policy above), so normal
 * log lines are not mangled. Returns `s` itself when nothing matched.
 */
export function redactLogText(s: string): string {
  let out = s;
  if (out.includes('PRIVATE KEY-----')) out = redactPrivateKeys(out);
  if (out.includes('://')) {
    out = out.replace(URL_USERINFO, (_m, info: string) => {
      const colon = info.indexOf(':');
      return colon < 0 ? `://${REDACTED}@` : `://${info.slice(0, colon)}:${REDACTED}@`;
    });
  }
  if (out.includes('@')) out = redactGoDsn(out);
  const eq = out.includes('=');
  if (eq) {
    out = out.replace(QUERY_PARAM, (m, sep: string, name: string, value: string) => (value !== '' && SECRET_KEY.test(name) ? `${sep}${name}=${REDACTED}` : m));
  }
  out = out.replace(AUTH_HEADER, (m, name: string, sep: string, first: string, second: string | undefined) => {
    if (AUTH_SCHEME.test(first)) return second === undefined ? m : `${name}${sep}${first}${second.slice(0, second.length - second.trimStart().length)}${REDACTED}`;
    return first === '' ? m : `${name}${sep}${REDACTED}${second ?? ''}`;
  });
  if (/bearer/i.test(out)) out = out.replace(BEARER, `$1$2${REDACTED}`); // "bearer token expired" is prose: the look-ahead keeps it
  if (eq || out.includes(':')) out = redactPairs(out);
  return out === s ? s : out;
}

/**
 * Strings in documents and command lines (annotations, runtime info, arguments,
 * the audit line's query values): the free-text rules, and `key: value` lines under
 * a secret-looking key (a YAML document in an annotation). Returns `s` itself when nothing matched.
 */
export function redactText(s: string): string {
  let out = redactLogText(s);
  if (out.includes(':')) out = redactYamlLines(out);
  return out === s ? s : out;
}

/** Each line holding a secret-looking word, once: as a YAML `key: value` line, its value goes when its key is secret-looking. */
function redactYamlLines(s: string): string {
  let out = '';
  let last = 0;
  SECRET_WORD.lastIndex = 0;
  for (let m = SECRET_WORD.exec(s); m !== null; m = SECRET_WORD.exec(s)) {
    const ls = s.lastIndexOf('\n', m.index) + 1;
    let le = s.indexOf('\n', m.index);
    if (le < 0) le = s.length;
    SECRET_WORD.lastIndex = le; // the rest of this line is decided here
    if (le - ls > 64 * 1024) continue;
    const line = s.slice(ls, le);
    const y = YAML_LINE.exec(line);
    if (y === null) continue;
    const [, indent, q, name, sep, value, cr] = y as unknown as [string, string, string, string, string, string, string];
    const v = value.trim();
    if (v === '' || !SECRET_KEY.test(name) || v.includes('<redacted') || /^(?:true|false|null|~|[|>][-+0-9]*|[{[]|#.*)$/i.test(v)) continue;
    out += `${s.slice(last, ls)}${indent}${q}${name}${q}${sep}${REDACTED}${cr}`;
    last = le;
  }
  return last === 0 ? s : out + s.slice(last);
}

/** `-----BEGIN … PRIVATE KEY-----` … `-----END … PRIVATE KEY-----`: the body goes (to the end of the text when the end is missing: a cut record). */
function redactPrivateKeys(s: string): string {
  let out = '';
  let last = 0;
  let i = s.indexOf('-----BEGIN ');
  while (i >= 0) {
    const headEnd = s.indexOf('-----', i + 11);
    if (headEnd < 0) break;
    const label = s.slice(i + 11, headEnd);
    if (label.length > 64 || !label.endsWith('PRIVATE KEY')) {
      i = s.indexOf('-----BEGIN ', i + 11);
      continue;
    }
    const bodyStart = headEnd + 5;
    const endMark = `-----END ${label}-----`;
    const j = s.indexOf(endMark, bodyStart);
    const body = s.slice(bodyStart, j < 0 ? s.length : j);
    if (body.trim() !== '' && body !== REDACTED) {
      out += s.slice(last, bodyStart) + REDACTED;
      last = j < 0 ? s.length : j;
    }
    if (j < 0) break;
    i = s.indexOf('-----BEGIN ', j + endMark.length);
  }
  return last === 0 ? s : out + s.slice(last);
}

/** Characters that end a Go DSN's `user:password` walking back from its `@`. */
const DSN_STOP = new Set([' ', '\t', '\n', '\r', '"', "'", '`', '<', '>', '(', ')', '=', ',', ';', '[', ']', '{', '}']);

/** `user:password@tcp(host)` → `user:<redacted>@tcp(host)`; the walk back from each `@proto(` is bounded (512). */
function redactGoDsn(s: string): string {
  let out = '';
  let last = 0;
  GO_DSN_AT.lastIndex = 0;
  for (let m = GO_DSN_AT.exec(s); m !== null; m = GO_DSN_AT.exec(s)) {
    const at = m.index;
    let start = at;
    while (start > last && at - start < 512 && !DSN_STOP.has(s[start - 1]!)) start--;
    const colon = s.indexOf(':', start);
    if (colon < 0 || colon >= at || colon + 1 === at) continue;
    out += s.slice(last, colon + 1) + REDACTED;
    last = at;
  }
  return last === 0 ? s : out + s.slice(last);
}

/** Name characters of a pair, walked back from its secret word. */
const isNameChar = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45 || c === 46;

/** `password=value`, `"api_key": "value"`, `--token=value` in free text, found by the name's last word (PAIR_SECRET_AT). */
function redactPairs(s: string): string {
  let out = '';
  let last = 0;
  PAIR_SECRET_AT.lastIndex = 0;
  for (let m = PAIR_SECRET_AT.exec(s); m !== null; m = PAIR_SECRET_AT.exec(s)) {
    const close = m[2]!;
    const sep = m[3]!;
    // the name's start: back over name characters (bounded); a quoted name is quoted on both sides
    let start = m.index;
    while (start > last && m.index - start < 128 && isNameChar(s.charCodeAt(start - 1))) start--;
    const open = start > 0 ? s[start - 1] : '';
    if (close !== '' && open !== close) continue;
    // `name: value` only with a quoted name (JSON, a Python dict): `error: token expired` is prose
    if (sep === ':' && close === '') continue;
    const from = PAIR_SECRET_AT.lastIndex;
    const end = pairValueEnd(s, from);
    const q = s[from];
    const quoted = q === '"' || q === "'";
    const closed = quoted && end > from + 1 && s[end - 1] === q;
    const inner = s.slice(quoted ? from + 1 : from, closed ? end - 1 : end);
    if (inner === '' || inner.startsWith('<redacted')) continue;
    out += s.slice(last, from) + (quoted ? `${q}${REDACTED}${closed ? q : ''}` : REDACTED);
    last = end;
    PAIR_SECRET_AT.lastIndex = end;
  }
  return last === 0 ? s : out + s.slice(last);
}

/** Where a pair's value ends: a quoted one at its closing quote (escapes honoured) or the line's end, a bare one at a space or a delimiter. */
function pairValueEnd(s: string, i: number): number {
  const open = s[i];
  if (open === '"' || open === "'") {
    let j = i + 1;
    while (j < s.length) {
      const c = s[j]!;
      if (c === '\\' && open === '"') j += 2;
      else if (c === open) return j + 1;
      else if (c === '\n' || c === '\r') return j;
      else j++;
    }
    return s.length;
  }
  let j = i;
  while (j < s.length && !PAIR_VALUE_STOP.has(s[j]!) && s.charCodeAt(j) > 32) j++;
  return j;
}
const PAIR_VALUE_STOP = new Set(['"', "'", '<', '>', '&', ';', ',', ')', '}', ']']);

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

/**
 * Tools whose secret follows a short flag or a word: redis-cli's `-a S`, sshpass's
 * `-p S`, `docker login -p S` (podman, nerdctl, ...; `docker run -p 80:80` is a port),
 * `vault login S`. Known by the command word's basename; a shell separator ends them.
 */
type Tool = 'redis' | 'sshpass' | 'registry' | 'registry-login' | 'vault' | 'vault-login';
const TOOLS = new Map<string, Tool>([
  ['redis-cli', 'redis'],
  ['valkey-cli', 'redis'],
  ['sshpass', 'sshpass'],
  ['docker', 'registry'],
  ['podman', 'registry'],
  ['nerdctl', 'registry'],
  ['buildah', 'registry'],
  ['skopeo', 'registry'],
  ['vault', 'vault'],
  ['bao', 'vault'],
]);
const SHELL_SEPARATORS = new Set(['&&', '||', ';', '|', '&']);
const toolOf = (w: string): Tool | undefined => (w.length <= 256 ? TOOLS.get(w.slice(w.lastIndexOf('/') + 1)) : undefined);

/** What the arguments before this one said: a value still to come, and the tool being run. */
interface ArgState {
  pending: Pending;
  tool: Tool | null;
}
const argState = (): ArgState => ({ pending: 'none', tool: null });

/**
 * The text rules for one argument: a top-level argument gets them; a word inside a
 * script does not, the script gets them once as a whole (see redactWords).
 */
type Text = (s: string) => string;
const keep: Text = (s) => s;

/** One argument given the state the previous ones left (updated in place); returns the redacted argument. `words`: a top-level argument (not a word of a script). */
function redactArg(a: string, st: ArgState, words: boolean): string {
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

/** Labels and annotations: by key, and JSON documents in values as documents. */
export function redactMap(map: Record<string, string>): Record<string, string> {
  const b = budget();
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map)) {
    let r: string;
    if (b.values <= 0) r = OVER;
    else if (SECRET_KEY.test(k)) r = REDACTED;
    else r = typeof v === 'string' ? stringValue(v, 0, b) : REDACTED;
    b.values--;
    set(out, k, r);
  }
  return out;
}

/**
 * A flat record by key (a request's query for the audit line, headers):
 * values under a secret-looking key become REDACTED whatever their type,
 * other strings (and arrays of strings) lose URL credentials and bearer tokens.
 */
export function redactFlatRecord<T>(record: Record<string, T>): Record<string, T | string | unknown[]> {
  const out: Record<string, T | string | unknown[]> = {};
  for (const [k, v] of Object.entries(record)) {
    if (SECRET_KEY.test(k)) set(out, k, secretValue(v) as T | string);
    else if (typeof v === 'string') set(out, k, redactText(v));
    else if (Array.isArray(v)) set(out, k, v.map((e: unknown) => (typeof e === 'string' ? redactText(e) : e)));
    else set(out, k, v);
  }
  return out;
}

/**
 * A value holding a JSON document (kubectl apply's
 * kubectl.kubernetes.io/last-applied-configuration annotation carries the whole
 * pod spec, env values included, and kubelet hands pod annotations to the
 * runtime) is redacted as a document, and re-serialized only when something in
 * it changed (the original text is evidence: containerd's CNI config source);
 * other text gets the text rules.
 */
export function redactJsonText(v: string): string {
  return stringValue(v, 0, budget());
}

/**
 * Deep redaction of a runtime document (containerd's verbose ContainerStatus
 * info: `runtimeSpec.process.env`, `config.envs`, annotations, args ...).
 * Never mutates its input; returns the input itself (or the part of it) where
 * nothing needed redaction. Bounded in depth and size (see above).
 */
export function redactDeep(value: unknown, key = ''): unknown {
  return walk(value, key, 0, budget());
}

interface Budget {
  values: number;
  parse: number;
}
const budget = (): Budget => ({ values: MAX_VALUES, parse: MAX_JSON_PARSE });

/** Under a secret-looking key: everything but null and booleans (nothing to hide there). */
const secretValue = (v: unknown): unknown => (v === null || v === undefined || typeof v === 'boolean' ? v : REDACTED);

/** `out[k] = v` that also works for a key named `__proto__` (JSON.parse makes such own properties). */
function set(out: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  else out[k] = v;
}

/** `depth` is the number of containers around the value. */
function walk(value: unknown, key: string, depth: number, b: Budget): unknown {
  b.values--;
  if (typeof value === 'string') return stringValue(value, depth, b);
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DEPTH) return DEEP;
  if (Array.isArray(value)) {
    if (ENV_KEY.test(key)) return mapArray(value, b, (e) => envEntry(e, depth + 1, b));
    if (ARGS_KEY.test(key)) return argList(value, depth + 1, b);
    return mapArray(value, b, (e) => walk(e, '', depth + 1, b));
  }
  const obj = value as Record<string, unknown>;
  const env = ENV_KEY.test(key); // env as a map: names stay, values go
  let out: Record<string, unknown> | undefined;
  const keys = Object.keys(obj);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (b.values <= 0) {
      out ??= copyKeys(obj, keys, i);
      set(out, REDACTED, OVER);
      break;
    }
    const v = obj[k];
    let r: unknown;
    if (SECRET_KEY.test(k) || env) {
      b.values--;
      r = secretValue(v);
    } else r = walk(v, k, depth + 1, b);
    if (out === undefined && !Object.is(r, v)) out = copyKeys(obj, keys, i);
    if (out !== undefined) set(out, k, r);
  }
  return out ?? obj;
}

function copyKeys(obj: Record<string, unknown>, keys: string[], n: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let j = 0; j < n; j++) set(out, keys[j]!, obj[keys[j]!]);
  return out;
}

/** `arr.map(fn)` that returns `arr` itself when nothing changed, and stops with a marker when the budget is spent. */
function mapArray(arr: readonly unknown[], b: Budget, fn: (v: unknown) => unknown): unknown {
  let out: unknown[] | undefined;
  for (let i = 0; i < arr.length; i++) {
    if (b.values <= 0) {
      out ??= arr.slice(0, i);
      out.push(OVER);
      return out;
    }
    const v = arr[i];
    const r = fn(v);
    if (out === undefined && !Object.is(r, v)) out = arr.slice(0, i);
    if (out !== undefined) out.push(r);
  }
  return out ?? arr;
}

/** One entry of an env list: `NAME=value`, CRI `{key, value}`, Kubernetes `{name, value}`. */
function envEntry(e: unknown, depth: number, b: Budget): unknown {
  if (typeof e === 'string') {
    b.values--;
    return redactEnvEntry(e);
  }
  const r = walk(e, '', depth, b);
  if (isObject(r) && 'value' in r && r.value !== REDACTED) {
    const out = { ...r };
    out.value = REDACTED;
    return out;
  }
  return r;
}

/** An args/command list: the command-line rules over its strings; anything else is walked (and redacted when a flag wanted it). */
function argList(list: readonly unknown[], depth: number, b: Budget): unknown {
  const st = argState();
  return mapArray(list, b, (a) => {
    b.values--;
    if (typeof a !== 'string') {
      const r = st.pending === 'none' ? walk(a, '', depth, b) : secretValue(a);
      st.pending = 'none';
      return r;
    }
    return redactArg(a, st, true);
  });
}

/** A string inside a document: a JSON document in it is redacted as one (depth counts on), other text gets the text rules. */
function stringValue(v: string, depth: number, b: Budget): string {
  let i = 0;
  while (i < v.length && (v[i] === ' ' || v[i] === '\n' || v[i] === '\r' || v[i] === '\t')) i++;
  if (v[i] !== '{' && v[i] !== '[') return redactText(v);
  // Too big to parse, or past the budget: it may hold env values, so all of it goes.
  if (v.length > MAX_JSON_TEXT) return bigJson(v.length);
  if (v.length > b.parse) return PARSE_BUDGET;
  b.parse -= v.length;
  let doc: unknown;
  try {
    doc = JSON.parse(v); // V8's JSON.parse is iterative: 2,000 levels parse; the walk bounds them
  } catch {
    return redactText(v);
  }
  const r = walk(doc, '', depth, b);
  return r === doc ? v : JSON.stringify(r);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
