/**
 * Identical concurrent requests share one rendered body (issue 12).
 *
 * The full-node routes share their work in flight (SingleFlight): every request that joins
 * a flight gets the same answer object. Without this hook each of them then ran its own
 * JSON.stringify of it (2 MB for /v1/cgroups at 1,000 containers, 6 MB at 3,000) and Node
 * encoded each string again for its socket: fifty clients, fifty copies. Here the first
 * request renders the object once into a Buffer and every request answering the same object
 * while that one is in flight writes that Buffer. Nothing is kept after the last of them
 * is answered (DESIGN.md's cache rule: never data read before the request arrived), and the
 * key is the object itself, so only answers that are literally the same are shared.
 *
 * Registered after the text format hook: a table is already a string; long text bodies
 * (a scrape) are shared the same way, by content, in onSend.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';

interface Rendered {
  body: Buffer;
  users: number;
}

/** a text body (a /metrics scrape, a table) this long is shared too; shorter ones cost less than the lookup */
const SHARED_TEXT_MIN = 64 * 1024;

export function installSharedBody(app: FastifyInstance): void {
  const inFlight = new WeakMap<object, Rendered>();
  /** text bodies by content: the routes hand identical requests the same string */
  const texts = new Map<string, Rendered>();
  const hold = (reply: FastifyReply, r: Rendered, forget: () => void) => {
    r.users++;
    reply.raw.once('close', () => {
      if (--r.users === 0) forget();
    });
  };
  app.addHook('preSerialization', async (_req, reply, payload) => {
    if (payload === null || typeof payload !== 'object' || Buffer.isBuffer(payload)) return payload;
    let r = inFlight.get(payload);
    if (!r) {
      r = { body: Buffer.from(JSON.stringify(payload)), users: 0 };
      inFlight.set(payload, r);
    }
    const shared = r;
    hold(reply, shared, () => inFlight.get(payload) === shared && inFlight.delete(payload));
    reply.serializer(() => shared.body as unknown as string);
    return payload;
  });
  // A string written to a socket is copied into native memory for that socket until the
  // client has read it: fifty clients of a 6.5 MB scrape held fifty copies (and glibc kept
  // the pages). One Buffer for them all is written without a copy.
  app.addHook('onSend', async (_req, reply, payload) => {
    if (typeof payload !== 'string' || payload.length < SHARED_TEXT_MIN) return payload;
    let r = texts.get(payload);
    if (!r) {
      r = { body: Buffer.from(payload), users: 0 };
      texts.set(payload, r);
    }
    const shared = r;
    hold(reply, shared, () => texts.get(payload) === shared && texts.delete(payload));
    return shared.body;
  });
}
