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
 * - An answer for one reading and one query (URL and Accept) is made once and shared by every
 *   request of that reading: the first to arrive makes it, the others send its bytes, and it goes
 *   with the reading. Only a 200 with a body in memory is shared; when the maker hands none (an
 *   error, its client gone), one of those waiting makes it next: at most one request makes a given
 *   answer at a time.
 * - `joinsAnswer` tells the load shedder which requests only wait for an answer so made: they
 *   take no slot, and enter that reading there and then (a reading they hold cannot be dropped
 *   before this plugin's hook runs).
 * - Once the last reading is released and none begins for a while, one full GC returns what the
 *   readings left (plugins/idle-gc.ts).
 * - JSON is rendered in slices (lib/slices.ts): one JSON.stringify of a full-node answer (6 MB at
 *   3,000 containers) would hold the event loop too long.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { jsonBuffer } from '../../lib/slices.js';
import { Reading, type Readings } from '../../reading.js';
import { installIdleGc } from './idle-gc.js';

interface Shared {
  type: string;
  body: Buffer;
}
type Made = Promise<Shared | null>;

interface State {
  reading: Reading | null;
  observedAt: string;
  /** on the request that makes its query's answer for the reading: hands it to the others */
  lead: ((s: Shared | null) => void) | null;
  /** on the others: the answer they wait for */
  made: Made | null;
}

const kState = Symbol('nodetruth.reading');
const kPinned = Symbol('nodetruth.reading.pinned');
type Marked = FastifyRequest & { [kState]?: State; [kPinned]?: Reading };
const stateOf = (req: FastifyRequest) => (req as Marked)[kState];

const NOT_READINGS = new Set(['/v1/throttling', '/v1/bundle']);
const isFollow = (req: FastifyRequest) => ['true', '1'].includes(String((req.query as Record<string, unknown> | undefined)?.follow));
const stated = (url: string) => url.startsWith('/v1/') || /^\/metrics(\?|$)/.test(url);
const plainObject = (v: object) => [Object.prototype, null].includes(Object.getPrototypeOf(v)) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
const answerKey = (req: FastifyRequest) => `${req.url}\n${req.headers.accept ?? ''}`;
const arrivedAt = (reply: FastifyReply) => performance.now() - reply.elapsedTime;
/** a request with a reading of its own (not a capture's, not one measuring over time) */
const ownsReading = (req: FastifyRequest, reply: FastifyReply) => {
  const route = req.routeOptions.url;
  return route !== undefined && !NOT_READINGS.has(route) && !isFollow(req) && !reply.raw.destroyed;
};

/** For the load shedder: the request's reading has made, or is making, its answer. */
export function joinsAnswer(readings: Readings): (req: FastifyRequest, reply: FastifyReply) => boolean {
  return (req, reply) => {
    if (req.method !== 'GET' || !stated(req.url)) return false;
    const key = answerKey(req);
    const inherited = Reading.current();
    if (inherited) return inherited.has(readings, key);
    if (!ownsReading(req, reply) || (req as Marked)[kPinned]) return false;
    if (!readings.peek(arrivedAt(reply))?.has(readings, key)) return false;
    const r = readings.enter(arrivedAt(reply));
    (req as Marked)[kPinned] = r;
    reply.raw.once('close', () => readings.leave(r));
    return true;
  };
}

export function installReadings(app: FastifyInstance, readings: Readings): void {
  installIdleGc(readings);
  /** Make this request the maker of its answer, or return the answer it waits for. */
  const elect = (st: State, req: FastifyRequest, reply: FastifyReply): Made | null => {
    const reading = st.reading!;
    const key = answerKey(req);
    let lead: ((s: Shared | null) => void) | null = null;
    const made = reading.once<Shared | null>(readings, key, () => new Promise((resolve) => (lead = resolve)));
    if (!lead) return made;
    const hand: (s: Shared | null) => void = lead;
    st.lead = (s) => {
      if (!s) reading.forget(readings, key, made); // the next one to ask makes it
      hand(s);
    };
    reply.raw.once('close', () => {
      const l = st.lead; // never reached onSend
      st.lead = null;
      l?.(null);
    });
    return null;
  };

  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    if (!stated(req.url)) return done();
    const inherited = Reading.current();
    const pinned = (req as Marked)[kPinned];
    const own = !inherited && !pinned && ownsReading(req, reply);
    const reading = inherited ?? pinned ?? (own ? readings.enter(arrivedAt(reply)) : null);
    const observedAt = (reading?.startedAt ?? new Date(Date.now() - reply.elapsedTime)).toISOString();
    const st: State = { reading, observedAt, lead: null, made: null };
    (req as Marked)[kState] = st;
    reply.header('x-nodetruth-observed-at', observedAt);
    if (!reading) return done();
    if (own) reply.raw.once('close', () => readings.leave(reading));
    // at once, so that an identical request arriving next joins this one (and takes no slot)
    if (req.method === 'GET') st.made = elect(st, req, reply);
    reading.run(done);
  });

  app.addHook('preHandler', async (req, reply) => {
    const st = stateOf(req);
    while (st?.made) {
      const got = await st.made;
      if (reply.sent || reply.raw.destroyed) return; // answered meanwhile (its deadline), or its client gone
      if (got) return reply.code(200).type(got.type).send(got.body);
      st.made = elect(st, req, reply); // its maker handed none: this one, or another waiting, makes it
    }
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
