/**
 * How sizes, times, ids and excerpts are written for people: the text tables
 * (`?format=text`), triage findings and error messages all use these, so one
 * value reads the same everywhere.
 */

/**
 * Bytes in IEC units with one decimal: 512B, 32MiB, 95.7MiB, 1.5GiB. IEC because
 * kubelet and kubectl speak Mi/Gi (memory.available<100Mi, limits of 256Mi):
 * a working set next to its limit should be in the limit's unit.
 */
export function humanSize(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = bytes;
  let i = 0;
  // compare the rounded value, so 1023.96KiB is written 1MiB and not 1024KiB
  while (Math.abs(Number(v.toFixed(1))) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number(v.toFixed(1))}${units[i]}`;
}

/** A ratio as a percentage with one decimal: 0.957 → 95.7%. */
export const percent = (ratio: number): string => `${(ratio * 100).toFixed(1)}%`;

/** Text cut to n characters, marked with … when cut (evidence excerpts stay bounded). */
export const clip = (s: string, n = 400): string => (s.length > n ? `${s.slice(0, n)}…` : s);

/** crictl prints IDs cut to 13 characters. */
export const shortId = (id: string | null | undefined): string => (id ?? '').slice(0, 13);

/** CONTAINER_RUNNING → Running, SANDBOX_NOTREADY → NotReady (crictl's words). */
export function stateWord(state: string): string {
  return STATE_WORDS[state] ?? state;
}
const STATE_WORDS: Record<string, string> = {
  CONTAINER_CREATED: 'Created',
  CONTAINER_RUNNING: 'Running',
  CONTAINER_EXITED: 'Exited',
  CONTAINER_UNKNOWN: 'Unknown',
  SANDBOX_READY: 'Ready',
  SANDBOX_NOTREADY: 'NotReady',
};

/** Whole seconds from an RFC 3339 time to now; null when there is no time. */
export function secondsSince(iso: string | null, nowMs: number): number | null {
  return iso ? Math.round((nowMs - Date.parse(iso)) / 1000) : null;
}

/** crictl's CREATED column: "5 minutes ago". */
export function ago(iso: string | null, now = Date.now()): string {
  const since = secondsSince(iso, now);
  if (since === null) return '';
  const s = Math.max(0, since);
  const [n, unit] =
    s < 60 ? [s, 'second'] : s < 3600 ? [Math.floor(s / 60), 'minute'] : s < 86400 ? [Math.floor(s / 3600), 'hour'] : [Math.floor(s / 86400), 'day'];
  if (unit === 'second' && n < 1) return 'Less than a second ago';
  return `${n} ${unit}${n === 1 ? '' : 's'} ago`;
}

/*
 * The one duration grammar of every flag and parameter (--cri-timeout 2s, window=5s,
 * --since 1h, --max-duration 4h): Go's, as kubectl and crictl take it ("2s", "500ms",
 * "1m30s", "1.5h"), plus `d` for days ("7d", which journal windows are measured in).
 * Parsed here next to their writing so that a message quoting a flag's value ("did
 * not answer within 2s") says it in the form the flag accepts.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** Each term is digits then a unit letter, so the match is linear; the text is at most 64 characters. */
const DURATION = /^(?:\d{1,12}(?:\.\d{1,9})?(?:ms|s|m|h|d))+$/;

/** A duration's text → ms, or null when it is not one. */
export function parseDuration(text: string): number | null {
  if (text.length > 64 || !DURATION.test(text)) return null;
  let ms = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms;
}

/** ms as a duration in its largest whole unit that Go (kubectl) reads back too: 7200000 → 2h, 90000 → 90s, 1500 → 1500ms. */
export function formatDuration(ms: number): string {
  for (const [unit, n] of [['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms !== 0 && ms % n === 0) return `${ms / n}${unit}`;
  return ms === 0 ? '0s' : `${ms}ms`;
}

/*
 * Text for a terminal. Everything the node holds is written by tenants, and a
 * terminal obeys the control characters in what it prints: ESC[2K erases a row,
 * ESC]0;…BEL retitles the window, ESC[8m hides what follows, a CR rewrites a line,
 * U+202E reorders it (Trojan Source). So every C0 control (U+0000–U+001F, tab,
 * newline and carriage return included), DEL, every C1 control (U+0080–U+009F:
 * U+009B is CSI on its own) and the bidi embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069) are written as visible, inert escapes. Since
 * every escape sequence starts with ESC or a C1 control, none survives.
 *
 * The form is the C string escape that systemd's cescape() writes for journalctl
 * and the kernel writes in /dev/kmsg: `\x1b` for ESC, `\x7f` for DEL, and `\t`,
 * `\n`, `\r` for tab, newline and carriage return (a text field stays one line:
 * a record cannot forge the line after it). Above U+007F the code point is written
 * `\u009b`, `\u202e`, so an escape never reads as a byte of UTF-8. A backslash is
 * kept as it is: the escapes are for reading, not a reversible encoding.
 *
 * `keepNewlines` keeps U+000A, for whole text answers whose lines are already
 * split (fields inside them escaped with the default). `json` writes the JSON
 * escape `\u001b` for every escaped character and keeps tab, newline and CR: in a
 * JSON document those can only be whitespace between tokens and every other
 * escaped character only sits inside a string, so the document stays valid and
 * parses to the same value.
 *
 * One pass of a single character class over the string: linear, no
 * backtracking; the result is at most 6 times the input (a bidi control).
 */
// eslint-disable-next-line no-control-regex
const TERMINAL_ALL = /[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const TERMINAL_LINES = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const TERMINAL_JSON = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
const SHORT: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const C_FORM: Record<string, string> = {};
const JSON_FORM: Record<string, string> = {};
for (const [from, to] of [[0x00, 0x1f], [0x7f, 0x9f], [0x202a, 0x202e], [0x2066, 0x2069]] as const) {
  for (let code = from; code <= to; code++) {
    const c = String.fromCharCode(code);
    C_FORM[c] = SHORT[c] ?? (code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
    JSON_FORM[c] = `\\u${code.toString(16).padStart(4, '0')}`;
  }
}
const cEscape = (c: string): string => C_FORM[c]!;
const jsonEscape = (c: string): string => JSON_FORM[c]!;

export function escapeTerminal(s: string, opts: { keepNewlines?: boolean; json?: boolean } = {}): string {
  if (opts.json) return s.replace(TERMINAL_JSON, jsonEscape);
  return s.replace(opts.keepNewlines ? TERMINAL_LINES : TERMINAL_ALL, cEscape);
}
