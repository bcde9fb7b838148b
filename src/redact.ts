/**
 * Secret redaction, in one place. Applied to everything the runtime hands us
 * that may carry credentials (container env, OCI spec, annotations, labels,
 * command lines) before it is returned or logged.
 *
 * Policy:
 * - every environment variable keeps its name; its value becomes REDACTED
 *   (values are configuration, and configuration is where secrets live);
 * - any other string whose key looks like a credential is REDACTED;
 * - `--password=x` / `--token x` style arguments keep the flag, lose the value.
 */
export const REDACTED = '<redacted>';

/** Keys whose values are treated as secrets wherever they appear. */
export const SECRET_KEY = /(pass(word|wd)?|secret|token|api[-_]?key|private[-_]?key|access[-_]?key|credential|auth|cookie|session|bearer|signature)/i;

const SECRET_ARG = /^(--?[A-Za-z0-9_.-]*(?:pass(?:word|wd)?|secret|token|api[-_]?key|private[-_]?key|access[-_]?key|credential|auth)[A-Za-z0-9_.-]*)(=.*)?$/i;

/** `NAME=value` → `NAME=<redacted>`. */
export function redactEnvEntry(entry: string): string {
  const i = entry.indexOf('=');
  return i < 0 ? entry : `${entry.slice(0, i)}=${REDACTED}`;
}

/** Redact values of `--secret-ish=value` and the argument after a bare `--secret-ish`. */
export function redactArgs(args: string[]): string[] {
  const out: string[] = [];
  let redactNext = false;
  for (const arg of args) {
    if (redactNext) {
      out.push(REDACTED);
      redactNext = false;
      continue;
    }
    const m = SECRET_ARG.exec(arg);
    if (m && m[2] !== undefined) out.push(`${m[1]}=${REDACTED}`);
    else {
      out.push(arg);
      if (m) redactNext = true;
    }
  }
  return out;
}

export function redactMap(map: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map)) out[k] = SECRET_KEY.test(k) ? REDACTED : redactJsonText(v);
  return out;
}

/**
 * A value holding a JSON document (kubectl apply's
 * kubectl.kubernetes.io/last-applied-configuration annotation carries the whole
 * pod spec, env values included, and kubelet hands pod annotations to the
 * runtime) is redacted as a document; other text is returned as is.
 */
export function redactJsonText(v: string): string {
  const s = v.trimStart();
  if (!s.startsWith('{') && !s.startsWith('[')) return v;
  let doc: unknown;
  try {
    doc = JSON.parse(v);
  } catch {
    return v;
  }
  return JSON.stringify(redactDeep(doc));
}

/**
 * Deep redaction of a runtime document (containerd's verbose ContainerStatus
 * info: `runtimeSpec.process.env`, `config.envs`, annotations, args ...).
 * Returns a new value; never mutates its input.
 */
export function redactDeep(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) {
    if (/^envs?$/i.test(key)) {
      return value.map((e) =>
        typeof e === 'string'
          ? redactEnvEntry(e)
          : isObject(e) && ('key' in e || 'value' in e) // CRI {key, value}; Kubernetes {name, value}
            ? { ...(redactDeep(e, '') as object), value: REDACTED }
            : redactDeep(e, ''),
      );
    }
    if (/^(args|command|cmd)$/i.test(key) && value.every((a) => typeof a === 'string')) return redactArgs(value as string[]);
    return value.map((v) => redactDeep(v, ''));
  }
  if (isObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = typeof v === 'string' ? (SECRET_KEY.test(k) ? REDACTED : redactJsonText(v)) : redactDeep(v, k);
    }
    return out;
  }
  return value;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
