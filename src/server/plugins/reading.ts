/**
 * Requests answered from one reading of the node (src/reading.ts; DESIGN.md "One reading of the node").
 *
 * - A /v1 or /metrics request enters its reading once admitted (registered after auth and the
 *   load shedder: a refused request holds none, auth reviews are made outside readings) and
 *   leaves it when its response closes, however it ends. Follow streams and /v1/throttling
 *   measure over time and a capture (/v1/bundle) is a reading of its own: none enters one. A
 *   request a capture injects runs in the capture's reading already.
 * - Every /v1 and /metrics answer states when its reading began (one that is no reading: when it
 *   arrived) in X-Nodetruth-Observed-At, and a JSON object answer in `observedAt`.
 * - An answer rendered for one reading and one query (URL and Accept) is shared by every request
 *   of that reading: the first makes it, the others send its bytes, and it goes with the reading.
 *   Only a 200 with a body in memory is shared; when the first makes none (an error, its client
 *   gone), the others make their own.
 * - JSON is rendered in slices (lib/slices.ts): one JSON.stringify of a full-node answer (6 MB at
 *   3,000 containers) would hold the event loop too long.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { jsonBuffer } from '../../lib/slices.js';
import { Reading, type Readings } from '../../reading.js';

interface Shared {
  type: string;
  body: Buffer;
}

interface State {
  reading: Reading | null;
  observedAt: string;
  /** on the request that makes its query's answer for the reading: hands it to the others */
  lead: ((s: Shared | null) => void) | null;
}

const kState = Symbol('nodetruth.reading');
const stateOf = (req: FastifyRequest) => (req as FastifyRequest & { [kState]?: State })[kState];

const NOT_READINGS = new Set(['/v1/throttling', '/v1/bundle']);
const isFollow = (req: FastifyRequest) => ['true', '1'].includes(String((req.query as Record<string, unknown> | undefined)?.follow));
const stated = (url: string) => url.startsWith('/v1/') || /^\/metrics(\?|$)/.test(url);
const plainObject = (v: object) => [Object.prototype, null].includes(Object.getPrototypeOf(v)) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';

export function installReadings(app: FastifyInstance, readings: Readings): void {
  /** the memo owner of the shared answers */
  const answers = {};

  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!stated(req.url)) return done();
    const route = req.routeOptions.url;
    const inherited = Reading.current();
    const own = !inherited && route !== undefined && !NOT_READINGS.has(route) && !isFollow(req) && !reply.raw.destroyed;
    const reading = inherited ?? (own ? readings.enter(performance.now() - reply.elapsedTime) : null);
    const observedAt = (reading?.startedAt ?? new Date(Date.now() - reply.elapsedTime)).toISOString();
    (req as FastifyRequest & { [kState]?: State })[kState] = { reading, observedAt, lead: null };
    reply.header('x-nodetruth-observed-at', observedAt);
    if (!reading) return done();
    if (own) reply.raw.once('close', () => readings.leave(reading));
    reading.run(done);
  });

  app.addHook('preHandler', async (req, reply) => {
    const st = stateOf(req);
    if (!st?.reading || req.method !== 'GET') return;
    let lead: ((s: Shared | null) => void) | null = null;
    const shared = st.reading.once(answers, `${req.url}\n${req.headers.accept ?? ''}`, () => new Promise<Shared | null>((resolve) => (lead = resolve)));
    if (lead) {
      st.lead = lead;
      reply.raw.once('close', () => lead!(null)); // never reached onSend
      return;
    }
    const got = await shared;
    if (reply.sent || !got) return; // answered meanwhile (its deadline), or nothing to share: its own answer
    return reply.code(200).type(got.type).send(got.body);
  });

  app.addHook('preSerialization', async (req, reply, payload) => {
    const st = stateOf(req);
    if (!st || payload === null || typeof payload !== 'object' || Buffer.isBuffer(payload)) return payload;
    const answer = reply.statusCode < 400 && !Array.isArray(payload) && plainObject(payload) ? { observedAt: st.observedAt, ...payload } : payload;
    const body = reply.raw.destroyed ? '' : await jsonBuffer(answer); // its client is gone: nothing will read the bytes
    reply.serializer(() => body as string);
    return answer;
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const st = stateOf(req);
    const lead = st?.lead;
    if (!lead) return payload;
    st.lead = null;
    const shareable = reply.statusCode === 200 && !reply.raw.destroyed && (typeof payload === 'string' || Buffer.isBuffer(payload));
    if (!shareable) return lead(null), payload;
    // one Buffer written to every socket without a copy (a string is copied for each)
    const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload as string);
    lead({ type: String(reply.getHeader('content-type') ?? 'application/octet-stream'), body });
    return body;
  });
}
