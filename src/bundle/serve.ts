/**
 * `nodetruth serve --bundle FILE`: the HTTP API answered from a bundle, offline and
 * read-only. Every captured route gives back its stored answer: the status, the
 * content type and the body byte for byte (the `?format=text` tables are stored
 * too, so they are identical). The app is the agent's own (the one builder,
 * src/server/app.ts buildApp) with this route table: every bound and plugin of the
 * live agent stands in front (problem+json errors, the audit line, the Host check and
 * --auth kubernetes when asked, the request deadline, the text format, connection
 * bounds); no reading of this machine is made.
 *
 * A bundle is data, never code: it may come from anyone, made by anything.
 * - Routing is the agent's own: the GET routes of the app buildApp makes (its route
 *   table, src/server/app.ts routeTableOf) are registered here with fastify's router,
 *   and a matched request finds its stored answer by one map lookup of its route key
 *   (bundle/format.ts routeKey). Nothing the bundle holds (its openapi.json among
 *   them) becomes a pattern; a URL that is no route of the agent is a 404, whatever
 *   the bundle stores under it. Container and pod id prefixes resolve against the
 *   captured ids, sorted once, by binary search.
 * - Only what the agent itself answers is replayed: a status from 200 to 599 and one
 *   of the agent's content types (AGENT_CONTENT_TYPES). A stored answer with anything
 *   else, or a stored /v1/triage that is not a triage report, is refused when the
 *   bundle is loaded: one warning in the log names them, /healthz counts and lists
 *   them, and a request for one answers 502 "Bundle answer refused" with the reason
 *   (the bundle, this server's upstream, gave an answer it will not pass on; the
 *   rest of the bundle is still served).
 * - Every answer (stored, problems, this server's own /healthz and /readyz, the
 *   HTTP parser's own refusals) carries `X-Content-Type-Options: nosniff` and
 *   `Content-Security-Policy: default-src 'none'`, so no browser sniffs a body into
 *   active content or runs anything in it.
 *
 * What needs the live node answers 409 with a problem saying so: follow streams, a
 * throttling window other than the captured one, any parameters not captured (but
 * /v1/timeline's, which narrow its stored answer: bundle/timeline.ts).
 * /readyz and /healthz are this server's own: they say it serves a bundle, of which
 * node, captured when, by which version.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { Problem, problemOf } from '../errors.js';
import { escapeTerminal } from '../format.js';
import type { TriageReport } from '../model/triage.js';
import { VERSION } from '../version.js';
import { buildApp, routeTableOf, type AppDeps, type RouteTable } from '../server/app.js';
import { sendProblem } from '../server/plugins/problems.js';
import { MAX_CANDIDATES, onlyMatch } from '../readers/cri/ids.js';
import { isSourceError } from '../readers/errors.js';
import { wantsText } from '../server/plugins/text-format.js';
import { routeKey } from './format.js';
import { narrowedTimeline } from './timeline.js';
import type { Bundle, StoredAnswer } from './read.js';

/** What the agent itself answers with (server/plugins: problems, text-format; routes/metrics' prom-client); nothing else is replayed. */
const AGENT_CONTENT_TYPES: readonly string[] = [
  'application/json; charset=utf-8',
  'application/problem+json; charset=utf-8',
  'text/plain; charset=utf-8',
  'text/plain; version=0.0.4; charset=utf-8',
];

/** The headers every answer of a bundle server carries. */
const INERT_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'",
};

/** The routes this server answers itself, whatever the bundle holds for them. */
const OWN_ROUTES = new Set(['/healthz', '/readyz', '/v1/bundle']);

/** Printable ASCII only, bounded: for a header value or a log line made from the manifest. */
const visible = (s: string, n = 200): string => s.slice(0, n).replace(/[^\x20-\x7e]/g, '?');

/** The one line every bundle server says first: it is not the node. */
export function bundleBanner(b: Bundle): string {
  const m = b.manifest;
  return visible(`serving a BUNDLE, not a live node: node ${m.node} captured at ${m.capturedAt} by nodetruth ${m.version} (${b.file})`, 2000);
}

// What renderText and a client of /v1/triage read of a report; other fields pass through untouched.
const evidenceSchema = z.looseObject({
  source: z.string(),
  excerpt: z.string(),
  path: z.string().optional(),
  call: z.string().optional(),
  cursor: z.string().optional(),
  seq: z.number().optional(),
});
const severity = z.enum(['critical', 'warning', 'info']);
const triageReportSchema = z.looseObject({
  node: z.string(),
  takenAt: z.string(),
  verdict: z.enum(['ok', 'warning', 'critical']),
  counts: z.looseObject({ critical: z.number(), warning: z.number(), info: z.number() }),
  findings: z.array(z.looseObject({ id: z.string(), severity, title: z.string(), detail: z.string(), hint: z.string(), evidence: z.array(evidenceSchema) })),
  sources: z.record(z.string(), z.looseObject({ ok: z.boolean() })),
  warnings: z.array(z.string()).optional(),
});

/** A stored /v1/triage body as a report, or why it is not one (one line, bounded). */
export function parseStoredTriage(body: Buffer): { report: TriageReport & { warnings?: string[] } } | { reason: string } {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return { reason: `the stored /v1/triage answer is not JSON (${visible((err as Error).message, 120)})` };
  }
  const r = triageReportSchema.safeParse(doc);
  if (!r.success) {
    const what = r.error.issues.slice(0, 3).map((i) => `${visible(i.path.join('.'), 60) || '(top)'}: ${visible(i.message, 80)}`).join('; ');
    return { reason: `the stored /v1/triage answer is not a triage report (${what})` };
  }
  // the parsed document itself: fields the schema does not name are kept for --json
  return { report: doc as TriageReport & { warnings?: string[] } };
}

/**
 * A stored answer as it may reach a terminal: a text body with every control character
 * but the newline escaped, a JSON body with those the JSON escapes leave raw (C1, DEL, the
 * bidi controls) written as \u escapes (the same document). The agent's own answers hold
 * none of them, so a bundle it captured is replayed byte for byte.
 */
function inert(a: StoredAnswer): StoredAnswer {
  const json = a.contentType.includes('json');
  const text = a.body.toString('utf8');
  const safe = escapeTerminal(text, json ? { json: true } : { keepNewlines: true });
  return safe === text ? a : { ...a, body: Buffer.from(safe, 'utf8') };
}

/** Why a stored answer is not replayed, or null when it is one the agent could have given. */
function refusalOf(key: string, a: StoredAnswer): string | null {
  if (!Number.isInteger(a.status) || a.status < 200 || a.status > 599) return `its stored status ${a.status} is not one the agent answers with (200 to 599)`;
  if (!AGENT_CONTENT_TYPES.includes(a.contentType)) return `its stored content type ${JSON.stringify(visible(a.contentType, 100))} is not one the agent answers with (${AGENT_CONTENT_TYPES.join(', ')})`;
  if (key === '/v1/triage' && a.status === 200) {
    const t = parseStoredTriage(a.body);
    if ('reason' in t) return t.reason;
  }
  return null;
}

/** The GET routes of the app buildApp makes over `deps`: the agent's own route table (built, read, closed; never served). */
async function agentRouteUrls(deps: AppDeps): Promise<string[]> {
  // auth none: this app only lists its routes; the bundle app installs the real auth
  const live = await buildApp({ ...deps, config: { ...deps.config, auth: 'none' } }, { shutdown: deps.shutdown, tls: null });
  try {
    await live.ready();
    const urls = new Set<string>();
    for (const r of routeTableOf(live)) {
      const methods = Array.isArray(r.method) ? r.method : [r.method];
      if (methods.includes('GET') && !OWN_ROUTES.has(r.url)) urls.add(r.url);
    }
    return [...urls];
  } finally {
    await live.close();
  }
}

/** Captured container and pod ids, sorted, for prefix lookups by binary search. */
class IdIndex {
  private readonly sorted: string[];
  constructor(ids: Iterable<string>) {
    this.sorted = [...new Set(ids)].sort();
  }
  /** The first index whose id is >= s. */
  private lower(s: string): number {
    let lo = 0;
    let hi = this.sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sorted[mid]! < s) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  /** How many ids start with `prefix`, and the first MAX_CANDIDATES of them. */
  matching(prefix: string): { count: number; ids: string[] } {
    const from = this.lower(prefix);
    // ids are lowercase hex: every id starting with the prefix sorts below prefix + 'g'
    const to = this.lower(`${prefix}g`);
    return { count: to - from, ids: this.sorted.slice(from, Math.min(to, from + MAX_CANDIDATES)) };
  }
}

export async function buildBundleApp(bundle: Bundle, deps: AppDeps): Promise<FastifyInstance> {
  const routeUrls = await agentRouteUrls(deps);
  // every answer says where it comes from, without touching the stored body; and is inert
  const origin = visible(`${bundle.manifest.node} captured ${bundle.manifest.capturedAt}`);
  return buildApp(deps, { shutdown: deps.shutdown, routes: [bundleTable(bundle, routeUrls)], headers: { ...INERT_HEADERS, 'x-nodetruth-bundle': origin }, readings: false });
}

/** serve --bundle's routes: its own /healthz, /readyz and /v1/bundle, and the agent's routes answered from the bundle. */
const bundleTable = (bundle: Bundle, routeUrls: string[]): RouteTable => async (app, deps, { tls }) => {
  const m = bundle.manifest;
  // the stored answers the agent could have given, by route key; the others with the reason they are refused
  const answers = new Map<string, StoredAnswer>();
  const refused = new Map<string, string>();
  for (const [key, a] of bundle.routes) {
    const why = refusalOf(key, a);
    if (why === null) answers.set(key, inert(a));
    else refused.set(key, why);
  }
  if (refused.size > 0) {
    const examples = [...refused].slice(0, 10).map(([k, why]) => `${visible(k)}: ${why}`);
    deps.log.warn({ bundle: bundle.file, refused: refused.size, examples }, `bundle: ${refused.size} stored answers refused (answered 502 with the reason): ${examples.slice(0, 3).join('; ')}`);
  }

  const captured = `this is a bundle of node ${m.node} captured at ${m.capturedAt} by nodetruth ${m.version}`;
  const info = {
    file: bundle.file,
    node: m.node,
    capturedAt: m.capturedAt,
    version: m.version,
    formatVersion: m.formatVersion,
    routes: answers.size,
    refused: { count: refused.size, answers: [...refused].slice(0, 50).map(([url, reason]) => ({ url: url.slice(0, 200), reason })) },
    trimmed: m.trimmed,
    failedSections: m.sections.filter((s) => s.error !== undefined).map((s) => `${s.kind} ${s.name}`.slice(0, 200)).slice(0, 50),
  };
  const readiness = { bundle: { ok: true, detail: `${bundleBanner(bundle)}; run without --bundle to read this machine` } };
  app.get('/healthz', async () => ({ status: 'ok', version: VERSION, bundle: info }));
  app.get(
    '/readyz',
    {
      config: {
        table: (b: { sources: Record<string, { ok: boolean; detail: string }> }) => ({
          columns: ['SOURCE', 'OK', 'DETAIL'],
          rows: Object.entries(b.sources).map(([name, s]) => [name, s.ok, s.detail]),
        }),
      },
    },
    async () => ({ status: 'ready', bundle: info, sources: readiness, tls: { enabled: tls() !== null } }),
  );

  const ids = { pods: [] as string[], containers: [] as string[] };
  for (const key of bundle.routes.keys()) {
    const g = /^\/v1\/(pods|containers)\/([0-9a-f]{64})(?:[/?]|$)/.exec(key);
    if (g) ids[g[1] as 'pods' | 'containers'].push(g[2]!);
  }
  const index = { pods: new IdIndex(ids.pods), containers: new IdIndex(ids.containers) };
  const heldThrottling = [...answers.values()].find((r) => r.url.startsWith('/v1/throttling'));

  const notLive = (req: FastifyRequest, reply: FastifyReply, detail: string) =>
    sendProblem(req, reply, new Problem('bundle_not_live', `${detail}: ${captured}`, { capturedAt: m.capturedAt, node: m.node }));

  app.get('/v1/bundle', async (req, reply) => notLive(req, reply, 'a new capture needs the live node; the bundle file itself is the capture'));

  const replay = async (req: FastifyRequest, reply: FastifyReply) => {
    const url = resolvePrefix(req.url, index);
    if ('problem' in url) return sendProblem(req, reply, url.problem);
    const key = routeKey(url.url, wantsText(req));
    const hit = answers.get(key);
    if (hit) return reply.code(hit.status).type(hit.contentType).send(hit.body);
    const why = refused.get(key);
    if (why !== undefined) return sendProblem(req, reply, new Problem('bundle_answer_refused', `the bundle's stored answer for ${key.slice(0, 200)} is refused: ${why}; ${captured}`, { node: m.node, capturedAt: m.capturedAt }));
    const q = req.query as Record<string, unknown>;
    const path = req.url.split('?')[0]!.replace(/\/+$/, '');
    if (q.follow !== undefined && q.follow !== 'false' && q.follow !== '0') return notLive(req, reply, 'a follow stream needs the live node');
    // the stored timeline narrowed by the parameters (offline, nothing read again)
    if (path === '/v1/timeline') {
      const n = narrowedTimeline(answers.get('/v1/timeline'), q, wantsText(req));
      if (n) return reply.code(200).type(n.type).send(n.body);
    }
    if (path === '/v1/throttling') return notLive(req, reply, `a new throttling window needs the live node; the bundle holds the sample ${heldThrottling ? heldThrottling.url.split('&')[0]!.slice(0, 200) : '(none)'}`);
    return notLive(req, reply, `${req.url.slice(0, 200)} was not captured (other parameters need the live node)`);
  };
  // the agent's routes, matched by fastify's router as on the live agent; anything else is the not-found handler's 404
  for (const u of routeUrls) app.get(u, replay);
};

/** An id prefix in /v1/pods/X or /v1/containers/X, resolved as the live agent does: unique → the full id; else 404 / 409. */
function resolvePrefix(url: string, index: { pods: IdIndex; containers: IdIndex }): { url: string } | { problem: Problem } {
  const g = /^\/v1\/(pods|containers)\/([0-9a-f]{1,63})(?=[/?]|$)/.exec(url);
  if (!g) return { url };
  const kind = g[1] as 'pods' | 'containers';
  const what = kind === 'pods' ? 'pod sandbox' : 'container';
  const found = index[kind].matching(g[2]!);
  const same = (id: string) => id;
  try {
    const id = onlyMatch(found.ids, same, {
      none: () => `no ${what} with id or prefix ${g[2]} in this bundle`,
      many: () => `${what} id prefix ${g[2]} matches ${found.count} in this bundle`,
    });
    return { url: `/v1/${kind}/${id}${url.slice(g[0].length)}` };
  } catch (err) {
    if (isSourceError(err)) return { problem: problemOf(err) };
    throw err;
  }
}
