/**
 * Route answers, taken through the app itself: every read route /openapi.json lists
 * that needs no id, then for each pod and container the routes that take one, each
 * stored exactly as the API gave it (status, content type, body).
 */
import { mapLimit } from '../lib/concurrency.js';
import { countRedacted, routeEntryName, type Section } from './format.js';
import { aborted, CAPTURE_LIMITS, errText, now, type CaptureContext } from './writer.js';

/** Routes a bundle does not capture: itself, and the spec (stored separately). */
const SKIP_ROUTES = new Set(['/v1/bundle', '/openapi.json']);
/** The answers whose ids the per-item routes take. */
const LISTS = new Set(['/v1/pods', '/v1/containers', '/v1/cgroups']);
/** Routes taken alone, before the rest: the runtime's own reads. */
const RUNTIME_FIRST = new Set(['/v1/runtime', '/v1/pods', '/v1/containers']);

interface Answer {
  status: number;
  contentType: string;
  body: Buffer;
}

async function inject(ctx: CaptureContext, url: string): Promise<Answer> {
  const res = await ctx.o.app.inject({ method: 'GET', url, headers: { host: '127.0.0.1', ...ctx.o.headers } });
  return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), body: res.rawPayload };
}

/** One route answer, stored as the API gave it; a failed call becomes a section with its error. */
async function storeRoute(ctx: CaptureContext, url: string): Promise<Answer | null> {
  aborted(ctx);
  const t0 = performance.now();
  const time = now();
  const section: Section = { kind: 'route', name: url, source: { route: url }, time, ms: 0, bytes: 0, redacted: 0 };
  ctx.sections.push(section);
  try {
    const a = await inject(ctx, url);
    section.ms = Math.round(performance.now() - t0);
    section.status = a.status;
    section.contentType = a.contentType;
    const name = routeEntryName(url, a.contentType, ctx.sections.length);
    if (await ctx.w.add('route', name, a.body)) {
      section.path = name;
      section.bytes = a.body.length;
      section.redacted = countRedacted(a.body);
    } else section.trimmed = 'over the size budget';
    return a;
  } catch (err) {
    section.ms = Math.round(performance.now() - t0);
    section.error = errText(err);
    return null;
  }
}

const withParam = (url: string, p: string) => `${url}${url.includes('?') ? '&' : '?'}${p}`;

function json(a: Answer | null): unknown {
  if (!a || a.status !== 200 || !/json/.test(a.contentType)) return null;
  try {
    return JSON.parse(a.body.toString('utf8'));
  } catch {
    return null;
  }
}

/** The read routes: fixed ones from /openapi.json, then each pod's and container's. */
export async function captureRoutes(ctx: CaptureContext): Promise<{ logs: Map<string, string | null> }> {
  const spec = await storeRoute(ctx, '/openapi.json');
  const doc = json(spec) as { paths?: Record<string, { get?: unknown }> } | null;
  const paths = Object.keys(doc?.paths ?? {}).filter((p) => doc!.paths![p]!.get && !p.includes('{') && !SKIP_ROUTES.has(p));
  const fixed: string[] = [];
  for (const p of paths) {
    // a throttling sample needs a window; a short one keeps the capture short
    const url = p === '/v1/throttling' ? `${p}?window=${ctx.o.throttlingWindow ?? '1s'}` : p;
    fixed.push(url);
    if (p !== '/metrics' && p !== '/healthz') fixed.push(withParam(url, 'format=text'));
  }
  const answers = new Map<string, Answer | null>();
  const store = async (url: string) => {
    const a = await storeRoute(ctx, url);
    // only the lists whose ids the per-item routes need are kept
    if (LISTS.has(url)) answers.set(url, a);
  };
  // The runtime's lists first, one at a time: with every other route running beside them, a
  // slow node's agent handles their answers past the CRI deadline (seen under TCG: the lists
  // 504 in the capture while the node's other agent had them). Inside the capture's reading
  // the routes after them reuse what they read.
  for (const url of fixed) if (RUNTIME_FIRST.has(url)) await store(url);
  await mapLimit(fixed.filter((url) => !RUNTIME_FIRST.has(url)), CAPTURE_LIMITS.concurrency, store);

  const pods = ((json(answers.get('/v1/pods') ?? null) as { items?: { id?: unknown }[] } | null)?.items ?? []).map((p) => p.id).filter(isHexId);
  const fromCri = ((json(answers.get('/v1/containers') ?? null) as { items?: { id?: unknown }[] } | null)?.items ?? []).map((c) => c.id).filter(isHexId);
  // with the runtime down, the cgroups still name the containers (processes, namespaces, logs work without it)
  const fromCgroups = ((json(answers.get('/v1/cgroups') ?? null) as { items?: { containerId?: unknown; kind?: unknown }[] } | null)?.items ?? [])
    .filter((c) => c.kind === 'container')
    .map((c) => c.containerId)
    .filter(isHexId);
  answers.clear();
  const containers = [...new Set([...fromCri, ...fromCgroups])];

  const perItem: string[] = [];
  for (const id of pods) perItem.push(`/v1/pods/${id}`, `/v1/pods/${id}?format=text`);
  const tail = ctx.o.logTailLines ?? 100;
  for (const id of containers) {
    for (const u of [`/v1/containers/${id}`, `/v1/containers/${id}/processes`, `/v1/containers/${id}/namespaces`, `/v1/containers/${id}/logs?tailLines=${tail}`]) {
      perItem.push(u, withParam(u, 'format=text'));
    }
  }
  const logs = new Map<string, string | null>(containers.map((id) => [id, null]));
  await mapLimit(perItem, CAPTURE_LIMITS.concurrency, async (url) => {
    const a = await storeRoute(ctx, url);
    const m = /^\/v1\/containers\/([0-9a-f]{64})$/.exec(url);
    if (m) {
      const logPath = (json(a) as { logPath?: unknown } | null)?.logPath;
      if (typeof logPath === 'string' && logPath.startsWith('/')) logs.set(m[1]!, logPath);
    }
  });
  return { logs };
}

const isHexId = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{1,64}$/.test(v);
