/**
 * Requests derived from the agent's own /openapi.json: every GET route, every
 * parameter, with values that are valid (from the schema's enum/pattern, and
 * real ids of the fake node) or hostile (path traversal, NUL bytes, 100 KB
 * strings, unicode, huge/negative numbers, option injection, regex bombs,
 * repeated parameters, unknown parameters). Built with fast-check.
 */
import fc from 'fast-check';

export interface OpenApiParam {
  name: string;
  in: 'query' | 'path' | 'header';
  required?: boolean;
  schema: JsonSchema;
}
interface JsonSchema {
  type?: string;
  enum?: string[];
  pattern?: string;
  maxLength?: number;
  minLength?: number;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  default?: unknown;
}
export interface Operation {
  path: string;
  params: OpenApiParam[];
}

export interface FuzzRequest {
  route: string;
  url: string;
  headers: Record<string, string>;
  /** the longest measurement window asked for (/v1/throttling), added to the time budget */
  windowMs: number;
  /** asked for a follow stream (only over real HTTP, with an abort) */
  follow: boolean;
}

export function operations(doc: { paths: Record<string, Record<string, { parameters?: OpenApiParam[] }>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [p, methods] of Object.entries(doc.paths)) {
    const get = methods.get;
    // /v1/bundle is every other route at once (a capture), one at a time by design (429 beyond):
    // generated at fuzz rates it would only measure that; test/bundle/* covers its inputs
    if (!get || p === '/openapi.json' || p === '/v1/bundle') continue;
    ops.push({ path: p, params: (get.parameters ?? []).filter((x) => x.in === 'query' || x.in === 'path') });
  }
  return ops.sort((a, b) => a.path.localeCompare(b.path));
}

const BIG = 100 * 1024;

/** Hostile values that target the layers behind the routes: files, argv, regex engines, numbers. */
export function hostileConstants(canary: { path: string; relative: string }): string[] {
  return [
    // path traversal, plain and encoded (they are encoded once more on the wire unless raw)
    '../../', '../../../../etc/passwd', '..%2f..%2f..%2fetc%2fpasswd', '%2e%2e%2f%2e%2e%2f', '%252e%252e%252f', '....//....//etc/passwd',
    '/etc/shadow', '/proc/self/environ', '/proc/1/environ', '/var/log/../../etc/passwd', '/var/log/pods/../../../', '/var/log/escape.log',
    '/var/log/pods/escape', 'pods/escape', canary.path, canary.relative, `/var/log/${canary.relative}`, 'C:\\Windows\\system32', '\\\\?\\C:\\',
    // NUL and control bytes, CRLF header injection
    '\0', 'a\0b', 'kubelet\0.service', '%00', '/var/log/syslog\0.txt', '\r\nX-Injected: 1', '\n', '\u001b[31mred', '\t',
    // unicode: RTL override, BOM, non-characters, combining marks, emoji, lone surrogates, fullwidth dots
    'ünïcödé', '日本語', '\u202e', '\ufeff', '\uffff', 'e\u0301\u0301\u0301', '👩‍👩‍👧‍👦', '\ud800', '\udfff', '．．／．．／', '\u2215etc\u2215passwd',
    // numbers
    '-1', '0', '-0', '1e308', '-1e308', '99999999999999999999999999', '-99999999999999999999', '9007199254740993', '2147483648', '4294967296',
    'NaN', 'Infinity', '-Infinity', '0x7fffffff', '1.5', '1_000', ' 1', '+1', '00000000001', '1e-7',
    // option and shell injection into child process argv
    '--output=x', '-u x', '-ux', '--root=/', '--directory=/', '--file=/etc/shadow', '-D/', '--merge', '-f', '--follow', '--', '-',
    '--since=1970-01-01', '--output-fields=MESSAGE', '--grep=.', '-n', '--lines=all', '$(id)', '`id`', ';id', '|id', '&& id', "'", '"', '\\',
    // regex bombs and bad patterns (PCRE2 and JS)
    '(a+)+$', '(a|a)*b', '(a|aa)+$', '(.*a){25}', '([a-zA-Z]+)*$', '(?:a?){40}a{40}', '(x+x+)+y', '^(([a-z])+.)+[A-Z]([a-z])+$',
    '[', '(', ')', '*', '+', '?', '{', 'x{99999999}', '(?R)', '(?<=a+)b', '\\p{Nonsense}', '(?{1})', '\\', '(*LIMIT_MATCH=1000000000)(a+)+$',
    '(?i)(a+)+b', '.*.*.*.*.*.*.*.*.*.*=', `${'('.repeat(500)}${')'.repeat(500)}`,
    // empties and lookalikes
    '', ' ', '%', '%%', '%zz', '?', '#', '&', '=', '==', 'true ', 'TRUE', 'yes', 'null', 'undefined', '[]', '{}', '__proto__', 'constructor',
  ];
}

function bigStrings(): fc.Arbitrary<string> {
  return fc.constantFrom('a', '/', '.', '../', 'é', '日', '(a+)+', '%2e', '\0').map((unit) => unit.repeat(Math.ceil(BIG / unit.length)).slice(0, BIG));
}

export function hostileValue(canary: { path: string; relative: string }): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...hostileConstants(canary)) },
    { weight: 1, arbitrary: bigStrings() },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom('.', '/', '%', '2', 'e', 'f', '\\', '\0'), maxLength: 30 }) },
    { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.bigInt({ min: -(1n << 128n), max: 1n << 128n })).map(String) },
    { weight: 1, arbitrary: fc.constantFrom('--', '-').chain((d) => fc.tuple(fc.constant(d), fc.stringMatching(/^[a-z-]{1,12}(=.{0,20})?$/))).map(([d, s]) => d + s) },
  );
}

/** Values the schema accepts (enum, pattern), plus known-good values by parameter name. */
function validValue(param: OpenApiParam, known: Record<string, string[]>): fc.Arbitrary<string> {
  const s = param.schema;
  const options: fc.Arbitrary<string>[] = [];
  const k = known[param.name] ?? known[`${param.in}:${param.name}`];
  const member = s.anyOf?.find((m) => m.type === 'string') ?? s;
  if (member.enum && member.enum.length > 0) options.push(fc.constantFrom(...member.enum.map(String)));
  else if (member.pattern) {
    // sampled once into a pool: stringMatching is slow to run per request (negated classes filter)
    const max = Math.min(member.maxLength ?? 64, 64);
    const pool = fc
      .sample(fc.stringMatching(new RegExp(member.pattern)), { numRuns: 200, seed: 42 })
      .filter((v) => v.length <= max && v.length >= (member.minLength ?? 0));
    if (pool.length > 0) options.push(fc.constantFrom(...new Set(pool)));
  } else options.push(fc.string({ maxLength: Math.min(member.maxLength ?? 32, 32) }));
  const fromSchema = options.length === 0 ? fc.string({ maxLength: 16 }) : options.length === 1 ? options[0]! : fc.oneof(...options);
  // known-good values (real ids, units) reach the sources more often than schema-shaped noise
  return k && k.length > 0 ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...k) }, { weight: 1, arbitrary: fromSchema }) : fromSchema;
}

export interface FuzzContext {
  canary: { path: string; relative: string };
  /** known-good values by parameter name (ids, uids, units...) */
  known: Record<string, string[]>;
  /** per route and parameter: values to use instead of what the schema allows (e.g. short throttling windows) */
  overrides?: Record<string, Record<string, string[]>>;
  /** allow follow=true (real HTTP with an abort) or not (app.inject) */
  allowFollow: boolean;
}

const FOLLOW_ON = new Set(['true', '1', '']);
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m)$/;
const durationMs = (v: string) => {
  const m = DURATION.exec(v);
  if (!m) return 0;
  return Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1000 : 60_000);
};

/** Percent-encode only what would make the URL unparseable; leave `/ . %` so traversal arrives raw. */
export function rawEncode(v: string): string {
  let out = '';
  for (const ch of v) {
    if (/^[A-Za-z0-9\-._~!$'()*+,;:@/%]$/.test(ch)) out += ch;
    else {
      try {
        out += encodeURIComponent(ch);
      } catch {
        out += '%EF%BF%BD'; // a lone surrogate
      }
    }
  }
  return out;
}

function enc(v: string, raw: boolean): string {
  if (raw) return rawEncode(v);
  try {
    return encodeURIComponent(v);
  } catch {
    return rawEncode(v);
  }
}

type Slot = { kind: 'absent' } | { kind: 'one'; value: string } | { kind: 'many'; values: string[] };

/** One random request for `op`. */
export function requestFor(op: Operation, ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const hostile = hostileValue(ctx.canary);
  const slotFor = (p: OpenApiParam): fc.Arbitrary<Slot> => {
    const over = ctx.overrides?.[op.path]?.[p.name];
    const valid = over ? fc.constantFrom(...over) : validValue(p, ctx.known);
    const value = fc.oneof({ weight: 3, arbitrary: valid }, { weight: 2, arbitrary: hostile });
    const one = value.map((v): Slot => ({ kind: 'one', value: v }));
    if (p.in === 'path') return fc.oneof({ weight: 3, arbitrary: one }, { weight: 1, arbitrary: hostile.map((v): Slot => ({ kind: 'one', value: v })) });
    return fc.oneof(
      { weight: over ? 0 : 3, arbitrary: fc.constant<Slot>({ kind: 'absent' }) },
      { weight: 4, arbitrary: one },
      { weight: 1, arbitrary: fc.array(value, { minLength: 2, maxLength: 20 }).map((values): Slot => ({ kind: 'many', values })) },
    );
  };
  const validSlotFor = (p: OpenApiParam): fc.Arbitrary<Slot> => {
    const over = ctx.overrides?.[op.path]?.[p.name];
    const valid = (over ? fc.constantFrom(...over) : validValue(p, ctx.known)).map((v): Slot => ({ kind: 'one', value: v }));
    // an overridden parameter is always given (absent, /v1/throttling's window would default to 5 s)
    return p.in === 'path' || over ? valid : fc.oneof(fc.constant<Slot>({ kind: 'absent' }), valid);
  };
  // built once per operation (building arbitraries per request is what costs)
  const validSlots = op.params.map(validSlotFor);
  const anySlots = op.params.map(slotFor);
  // a third valid throughout (reaches the sources), a third with one hostile parameter, a third anything goes
  const allValid = fc.tuple(...validSlots);
  const oneHostile =
    op.params.length === 0
      ? allValid
      : fc.nat(op.params.length - 1).chain((k) => fc.tuple(...op.params.map((_, i) => (i === k ? anySlots[i]! : validSlots[i]!))));
  const slots = fc.oneof(allValid, oneHostile, fc.tuple(...anySlots));
  // one request in eight carries a parameter the route does not declare
  const extra = fc.oneof(
    { weight: 7, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('unknown', 'follow', 'format', '__proto__', 'constructor', 'a[b]', 'q.q', ''), hostile) },
  );
  const headers = fc.record({
    accept: fc.constantFrom(undefined, 'application/json', 'text/plain', 'text/event-stream', '*/*', 'text/plain;q=0, application/json', 'text/html'),
    raw: fc.boolean(),
  });
  return fc.tuple(slots, extra, headers).map(([values, more, h]) => {
    let pathText = op.path;
    const qs: string[] = [];
    let windowMs = 0;
    let follow = false;
    op.params.forEach((p, i) => {
      let slot = values[i]!;
      if (p.name === 'follow') {
        const on = (v: string) => FOLLOW_ON.has(v);
        const asked = slot.kind === 'one' ? on(slot.value) : slot.kind === 'many' ? slot.values.some(on) : false;
        if (asked && !ctx.allowFollow) slot = { kind: 'one', value: 'false' };
        else if (asked) follow = true;
      }
      if (p.name === 'window') {
        const vs = slot.kind === 'one' ? [slot.value] : slot.kind === 'many' ? slot.values : ['5s'];
        windowMs = Math.max(...vs.map(durationMs).filter((x) => x <= 30_000), slot.kind === 'absent' ? 5000 : 0);
      }
      if (p.in === 'path') {
        const v = slot.kind === 'one' ? slot.value : slot.kind === 'many' ? slot.values[0]! : 'x';
        pathText = pathText.replace(`{${p.name}}`, enc(v, h.raw));
      } else if (slot.kind === 'one') qs.push(`${enc(p.name, false)}=${enc(slot.value, h.raw)}`);
      else if (slot.kind === 'many') for (const v of slot.values) qs.push(`${enc(p.name, false)}=${enc(v, h.raw)}`);
    });
    if (more) {
      const startsStream = more[0] === 'follow' && FOLLOW_ON.has(more[1]) && op.params.some((p) => p.name === 'follow');
      if (!startsStream || ctx.allowFollow) qs.push(`${enc(more[0], false)}=${enc(more[1], h.raw)}`);
      if (startsStream && ctx.allowFollow) follow = true;
    }
    const headers: Record<string, string> = {};
    if (h.accept) headers.accept = h.accept;
    return { route: op.path, url: qs.length > 0 ? `${pathText}?${qs.join('&')}` : pathText, headers, windowMs, follow };
  });
}

/** `n` requests spread evenly over the operations. */
export function sampleRequests(ops: Operation[], ctx: FuzzContext, n: number, seed: number): FuzzRequest[] {
  const per = Math.ceil(n / ops.length);
  return ops.flatMap((op, i) => fc.sample(requestFor(op, ctx), { numRuns: per, seed: seed + i }));
}

/**
 * The same, generated lazily in chunks (a run holds megabytes of 100 KB values;
 * keeping them all would blur the RSS figure), interleaving the operations.
 */
export function* requestChunks(ops: Operation[], ctx: FuzzContext, n: number, seed: number, chunk = 500): Generator<FuzzRequest[]> {
  const arbs = ops.map((op) => requestFor(op, ctx));
  // routes with more parameters get more requests: a route without any has only unknown ones to try
  const weight = ops.map((op) => 1 + 2 * op.params.filter((p) => p.name !== 'format').length);
  const total = weight.reduce((a, b) => a + b, 0);
  const per = weight.map((w) => Math.max(1, Math.round((chunk * w) / total)));
  let made = 0;
  for (let round = 0; made < n; round++) {
    const out: FuzzRequest[] = [];
    arbs.forEach((arb, i) => out.push(...fc.sample(arb, { numRuns: per[i]!, seed: seed + round * 7919 + i })));
    made += out.length;
    yield out;
  }
}
