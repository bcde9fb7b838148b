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
import { ARGS_KEY, ENV_KEY, MAX_DEPTH, MAX_JSON_PARSE, MAX_JSON_TEXT, MAX_VALUES, REDACTED, SECRET_KEY } from './rules/redaction.js';
import { argState, redactArg, redactArgs } from './redact/args.js';
import { redactText } from './redact/text.js';

export { MAX_DEPTH, MAX_JSON_PARSE, MAX_JSON_TEXT, MAX_VALUES, REDACTED, SECRET_KEY } from './rules/redaction.js';
export { redactArgs } from './redact/args.js';
export { redactLogText, redactText } from './redact/text.js';

const DEEP = `<redacted: nested deeper than ${MAX_DEPTH}>`;
const OVER = `<redacted: more than ${MAX_VALUES} values>`;
const bigJson = (n: number) => `<redacted: JSON text of ${n} characters, over the ${MAX_JSON_TEXT}-character parse bound>`;
const PARSE_BUDGET = `<redacted: JSON text past this document's ${MAX_JSON_PARSE}-character parse budget>`;

/** `NAME=value` → `NAME=<redacted>`. */
export function redactEnvEntry(entry: string): string {
  const i = entry.indexOf('=');
  return i < 0 ? entry : `${entry.slice(0, i)}=${REDACTED}`;
}


/**
 * Rows holding a command line (a process listing) as they leave the agent: each
 * cmdline by the command-line rules; a row with nothing to redact is returned as is.
 */
export function redactCmdlines<T extends { cmdline: readonly string[] }>(rows: readonly T[]): T[] {
  return rows.map((r) => {
    const c = redactArgs([...r.cmdline]);
    return c.every((a, i) => a === r.cmdline[i]) ? r : { ...r, cmdline: c };
  });
}

/**
 * Labels and annotations: by key, and JSON documents in values as documents. Never mutates
 * its input; returns the input itself when nothing needed redaction (most maps: a reading of
 * 1,000 containers copies none of them).
 */
export function redactMap(map: Record<string, string>): Record<string, string> {
  const b = budget();
  let out: Record<string, unknown> | undefined;
  const keys = Object.keys(map);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const v = map[k];
    let r: string;
    if (b.values <= 0) r = OVER;
    else if (SECRET_KEY.test(k)) r = REDACTED;
    else r = typeof v === 'string' ? stringValue(v, 0, b) : REDACTED;
    b.values--;
    if (out === undefined && r !== v) out = copyKeys(map, keys, i);
    if (out !== undefined) set(out, k, r);
  }
  return (out as Record<string, string> | undefined) ?? map;
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

/**
 * A string inside a document: a JSON document in it is redacted as one (depth counts on),
 * other text gets the text rules. kubectl's last-applied-configuration annotation carries a
 * whole pod spec, env values included; a document is re-serialized only when something in it
 * changed, since the original text is evidence (containerd's CNI config source).
 */
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
