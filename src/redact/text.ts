/**
 * Secrets in free text (journal records, container log lines, log files) and in the
 * strings of documents and command lines, by their shape (rules/redaction.ts).
 */
import { AUTH_HEADER, AUTH_SCHEME, BEARER, DSN_STOP, GO_DSN_AT, PAIR_SECRET_AT, PAIR_VALUE_STOP, QUERY_PARAM, REDACTED, SECRET_KEY, SECRET_WORD, URL_USERINFO, YAML_LINE } from '../rules/redaction.js';

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
