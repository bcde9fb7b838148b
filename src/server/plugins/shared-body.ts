/**
 * Identical concurrent requests share one rendered body.
 *
 * The full-node routes share their work in flight (SingleFlight): every request that joins
 * a flight gets the same source objects, but each route builds its own answer around them
 * (`{ items, warnings }`, filtered and sorted per request). Each of them running its own
 * JSON.stringify (2 MB for /v1/cgroups at 1,000 containers, 6 MB at 3,000), all in the tick the
 * flight resolves, holds the event loop 300-600 ms at a time under 50 connections
 * (bench/RESULTS.md, "the event loop under load"). Here an answer is rendered once for
 * every request of the same URL whose answer is made of the very same objects (compared by
 * identity, a few levels deep, never by content), and rendered in slices with turns of the event
 * loop between them (lib/slices.ts). Nothing is kept after the last request sharing a body is
 * answered (DESIGN.md's cache rule: never data read before the request arrived; an answer built
 * of the same objects as one in flight holds nothing newer than it).
 *
 * Registered after the text format hook: a table is already a string; long text bodies
 * (a scrape) are shared the same way, by content, in onSend.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';

import { jsonBuffer, textBuffer } from '../../lib/slices.js';

interface SharedText {
  text: string;
  body: Promise<Buffer>;
  users: number;
}

interface Rendering {
  /** the answer it renders, kept to compare later answers with */
  payload: object;
  body: Promise<Buffer>;
  users: number;
  forget(): void;
}

/** a text body (a /metrics scrape, a table) this long is shared too; shorter ones cost less than the lookup */
const SHARED_TEXT_MIN = 64 * 1024;
/** distinct answers of one URL shared at once (successive flights overlapping while written); past it, rendered alone */
const RENDERINGS_PER_URL = 4;
/** answer, its fields, their entries: entries are the flight's objects, compared by identity */
const SAME_DEPTH = 3;
/** objects and arrays compared at most, per comparison: past it, the answers count as different */
const SAME_BUDGET = 20_000;

const plain = (v: object) => {
  const proto = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
};

/**
 * True when `a` and `b` are the same objects, or plain objects and arrays with the same keys in
 * the same order whose values are, down to SAME_DEPTH levels: their JSON is then the same bytes.
 * Primitives compare by value (`===`: NaN is never the same, which only costs a render).
 */
function sameAnswer(a: unknown, b: unknown, depth: number, budget: { left: number }): boolean {
  if (a === b) return true;
  if (depth === 0 || a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (--budget.left < 0) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameAnswer(a[i], b[i], depth - 1, budget)) return false;
    return true;
  }
  if (!plain(a) || !plain(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i] || !sameAnswer((a as Record<string, unknown>)[ka[i]!], (b as Record<string, unknown>)[kb[i]!], depth - 1, budget)) return false;
  }
  return true;
}

export function installSharedBody(app: FastifyInstance): void {
  /** answers being rendered or written, by method and URL */
  const renderings = new Map<string, Rendering[]>();
  /** long text bodies being encoded or written */
  const texts: SharedText[] = [];
  const hold = (reply: FastifyReply, r: { users: number }, forget: () => void) => {
    r.users++;
    reply.raw.once('close', () => {
      if (--r.users === 0) forget();
    });
  };
  app.addHook('preSerialization', async (req, reply, payload) => {
    if (payload === null || typeof payload !== 'object' || Buffer.isBuffer(payload)) return payload;
    if (reply.raw.destroyed) {
      // the client went away while its answer was made (an abort while it waited in the shed queue or
      // on a flight): its response emitted 'close' already and never will again, so a rendering held
      // for it would never be let go (it kept the answer, 2-6 MB of records, and its body for good,
      // up to RENDERINGS_PER_URL per URL, URLs being the client's). Nothing will read the bytes.
      reply.serializer(() => '');
      return payload;
    }
    const key = `${req.method} ${req.url}`;
    const list = renderings.get(key) ?? [];
    let r = list.find((x) => sameAnswer(x.payload, payload, SAME_DEPTH, { left: SAME_BUDGET }));
    if (!r && list.length < RENDERINGS_PER_URL) {
      const made: Rendering = {
        payload,
        body: jsonBuffer(payload),
        users: 0,
        forget: () => {
          const i = list.indexOf(made);
          if (i >= 0) list.splice(i, 1);
          if (list.length === 0 && renderings.get(key) === list) renderings.delete(key);
        },
      };
      list.push(made);
      renderings.set(key, list);
      made.body.catch(made.forget); // a render that failed (JSON.stringify threw) is not shared: each request answers its own error
      r = made;
    }
    if (r) hold(reply, r, r.forget);
    const body = await (r?.body ?? jsonBuffer(payload));
    reply.serializer(() => body as unknown as string);
    return payload;
  });
  // A string written to a socket is copied into native memory for that socket until the
  // client has read it: fifty clients of a 6.5 MB scrape held fifty copies (and glibc kept
  // the pages). One Buffer for them all is written without a copy, encoded in slices. The
  // routes hand identical concurrent requests the same string: found by identity (`===` is a
  // pointer comparison for the same string, and a length comparison for most others; a Map
  // would hash every new scrape whole, in one stretch).
  app.addHook('onSend', async (_req, reply, payload) => {
    if (typeof payload !== 'string' || payload.length < SHARED_TEXT_MIN) return payload;
    if (reply.raw.destroyed) return ''; // its client is gone: holding the text for it would keep it for good (above)
    let r = texts.find((x) => x.text === payload);
    if (!r) {
      const made: SharedText = { text: payload, body: textBuffer(payload), users: 0 };
      r = made;
      texts.push(made);
    }
    const shared = r;
    hold(reply, shared, () => {
      const i = texts.indexOf(shared);
      if (i >= 0) texts.splice(i, 1);
    });
    return shared.body;
  });
}
