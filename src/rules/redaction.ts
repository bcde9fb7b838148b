/**
 * Redaction rules as data: the marker, the bounds, which keys, flags and headers name
 * a secret, the shapes of secrets in free text, and the tools whose secret follows a
 * short flag. The engine that applies them is src/redact.ts (documents, maps),
 * src/redact/text.ts (free text) and src/redact/args.ts (command lines); its policy is
 * written there. Each text pattern starts at a literal and has one unbounded run with
 * nothing after it to fail against but one literal, so a scan is linear in the string.
 */
export const REDACTED = '<redacted>';

/** Paths the logger (pino) never prints, wherever they appear in a log object. */
export const LOG_REDACT_PATHS = ['req.headers.authorization', 'headers.authorization', 'authorization', 'token', '*.token', 'password', '*.password'];

/** Containers (objects, arrays) nested deeper than this are replaced by a marker. */
export const MAX_DEPTH = 64;
/** Values visited per call (one pod's annotations, one verbose info document). */
export const MAX_VALUES = 100_000;
/** A JSON-holding string longer than this is not parsed: it is redacted whole. */
export const MAX_JSON_TEXT = 256 * 1024;
/** JSON text parsed per call, all strings together (parsing costs ~25 ms per MiB). */
export const MAX_JSON_PARSE = 512 * 1024;

/** Keys whose values are treated as secrets wherever they appear (maps, documents, headers, query parameters). */
export const SECRET_KEY = /(pass(word|wd)?|secret|token|api[-_]?key|private[-_]?key|access[-_]?key|signing[-_]?key|credential|auth|cookie|session|bearer|signature|jwt|kubeconfig[-_]?data|(^|[-_.])creds?($|[-_.]))/i;

/**
 * Flag names whose value is a secret. Narrower than SECRET_KEY: `--session-timeout 30`
 * must not swallow the next argument; `--jwt-issuer` and `--incredible` name no secret.
 * Unanchored alternation of short literals and two end-anchored words: linear.
 */
export const SECRET_FLAG = /pass(?:word|wd)?|secret|token|api[-_]?key|private[-_]?key|access[-_]?key|signing[-_]?key|credential|auth|kubeconfig[-_]?data|[-_.](?:jwt|creds?)$/i;
/** `-x`, `--some.flag-name`; anchored, one character class: linear. */
export const FLAG_NAME = /^--?[A-Za-z0-9_.-]+$/;
/** A positional `NAME=value`'s name (env style, helm's `a.b[0].password`). */
export const ASSIGN_NAME = /^[A-Za-z0-9_.[\]-]{1,256}$/;
/** A header's name (`Authorization`, `X-Api-Key`). */
export const HEADER_NAME = /^[A-Za-z0-9_-]{1,128}$/;
export const ENV_KEY = /^envs?$/i;
export const ARGS_KEY = /^(args|command|cmd)$/i;

// Shapes of secrets in free text (the g-flagged ones are used with lastIndex by one caller at a time).
/** `://userinfo@`: the run stops at `/`, so runs never overlap; greedy, it ends at the last `@`. */
export const URL_USERINFO = /:\/\/([^\s/?#"'<>]*)@/g;
/** `?name=value`, `&name=value`, `;name=value` with a bounded name. */
export const QUERY_PARAM = /([?&;])([A-Za-z0-9_.[\]-]{1,128})=([^&;#\s"'<>]*)/g;
/** `Bearer <token>`. */
export const BEARER = /\b(bearer)(\s+)(?!(?:tokens?|auth(?:entication|orization)?|header|scheme)(?:[\s"'<>,;]|$))([^\s"'<>,;]+)/gi;
/**
 * An authorization header written out (`Authorization: Basic x`, JSON `"X-Api-Key":"x"`):
 * starts at a literal name; the first word, and a second when the first is a scheme.
 */
export const AUTH_HEADER = /\b((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|x-access-token|private-token|x-vault-token)(["']?[ \t]*[:=][ \t]*["']?)([^\s"'<>,;]*)([ \t]+[^\s"'<>,;]+)?/gi;
export const AUTH_SCHEME = /^(?:bearer|basic|digest|token|negotiate|apikey|key|hmac|aws4-hmac-sha256)$/i;
/**
 * A `name=value` or `"name": value` pair whose name ends in a secret word, found by
 * that word (a literal: text without one costs one scan); the rest of the name is
 * walked back by hand, the value scanned by hand. Narrow on purpose, for free text:
 * klog's `secret="ns/name"` names a Secret, it holds none.
 */
export const PAIR_SECRET_AT = /(password|passwd|passphrase|token|secret[-_.]?key|client[-_.]?secret|api[-_.]?key|access[-_.]?key|private[-_.]?key|auth[-_.]?key|signing[-_.]?key|jwt)(["']?)[ \t]*([=:])[ \t]*/gi;
/** Go's DSN `user:password@tcp(host:3306)/db` (go-sql-driver/mysql): the `@proto(` is the literal found first. */
export const GO_DSN_AT = /@(?:tcp[46]?|udp[46]?|unix|unixgram|unixpacket)\(/g;
/** A secret-looking word anywhere: where a YAML-style line may start being looked at. */
export const SECRET_WORD = new RegExp(SECRET_KEY.source, 'gi');
/** One YAML-style line `  password: value` (`- password: value`, quoted keys): bounded indent and name. */
export const YAML_LINE = /^([ \t]{0,64}(?:-[ \t]{1,8})?)(["']?)([A-Za-z0-9_.-]{1,128})\2([ \t]*:[ \t]+)([^\r]*)(\r?)$/;

/** Characters that end a Go DSN's `user:password` walking back from its `@`. */
export const DSN_STOP = new Set([' ', '\t', '\n', '\r', '"', "'", '`', '<', '>', '(', ')', '=', ',', ';', '[', ']', '{', '}']);
/** Characters that end a bare pair value. */
export const PAIR_VALUE_STOP = new Set(['"', "'", '<', '>', '&', ';', ',', ')', '}', ']']);

/**
 * Tools whose secret follows a short flag or a word: redis-cli's `-a S`, sshpass's
 * `-p S`, `docker login -p S` (podman, nerdctl, ...; `docker run -p 80:80` is a port),
 * `vault login S`. Known by the command word's basename; a shell separator ends them.
 */
export type Tool = 'redis' | 'sshpass' | 'registry' | 'registry-login' | 'vault' | 'vault-login';
export const TOOLS = new Map<string, Tool>([
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
export const SHELL_SEPARATORS = new Set(['&&', '||', ';', '|', '&']);
