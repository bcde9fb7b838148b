/**
 * Every connection makes progress or is cut, and the bytes the agent has written that its
 * clients have not taken are bounded (DESIGN.md "Security model").
 *
 * Drain timeout: a socket that holds bytes for its client (Node's writable buffer, libuv's
 * write queue; under TLS, the TCP socket's queue beneath it) and has handed none of them to
 * the kernel for --drain-timeout is destroyed. So a client that stops reading holds nothing
 * longer than that: not the capture slot, not a load-shed slot, not an 11 MB answer. A quiet
 * follow stream holds no bytes and is never cut here; a slow client that keeps taking bytes
 * is never cut here either.
 *
 * Bytes in flight: written and not yet taken by the client, read per socket from those same
 * buffers (an upper bound). One Buffer written without a copy to several plain sockets (a
 * reading's shared answer) is held once, so it counts once: the most any of those sockets
 * still holds of it; under TLS each socket encrypts its own copy, so each counts. A
 * request is refused 429 while its client (its address) already holds more than
 * IN_FLIGHT.perClient. An answer of IN_FLIGHT.small bytes or more is refused when it would
 * take its client past IN_FLIGHT.perClient (429) or every client together past
 * IN_FLIGHT.total (503, Retry-After), unless nothing is in flight there: one answer always
 * goes, whatever its size. /healthz is never refused (its answer is a few bytes; refusing
 * it would let a client that stops reading get the agent restarted by its probe).
 */
import { Socket } from 'node:net';
import { getHeapStatistics } from 'node:v8';
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { Problem } from '../errors.js';
import { formatDuration } from '../format.js';
import { guardCounts } from '../process-guard.js';

/**
 * Held answers live in the agent's memory (a body as a string is on V8's heap): the
 * bounds are at most a sixteenth and an eighth of the heap's limit, so the debug pod's
 * 96 MiB old space holds them beside its readings, and 32 and 64 MiB on a larger heap.
 */
const heapLimit = getHeapStatistics().heap_size_limit;
export const IN_FLIGHT = {
  /** bytes one client address may hold unread before its next request is refused */
  perClient: Math.min(32 * 2 ** 20, Math.floor(heapLimit / 16)),
  /** bytes every client together may hold unread before a large answer is refused */
  total: Math.min(64 * 2 ** 20, Math.floor(heapLimit / 8)),
  /** answers shorter than this are never refused for bytes in flight */
  small: 64 * 1024,
} as const;

interface ConnectionBoundsOptions {
  /** --drain-timeout, ms */
  drainTimeoutMs: number;
  perClientBytes?: number;
  totalBytes?: number;
}

interface Watched {
  key: string;
  /** the socket's queue sizes when they last changed */
  sig: string;
  /** when they last changed, or the socket last held nothing */
  since: number;
}

type WithHandle = { _handle?: { writeQueueSize?: number } | null; _parent?: { _handle?: { writeQueueSize?: number } | null } | null };

/** Node's buffer, libuv's queue, and under TLS the TCP socket's queue. */
function queues(s: Socket): [number, number, number] {
  const h = s as unknown as WithHandle;
  return [s.writableLength, h._handle?.writeQueueSize ?? 0, h._parent?._handle?.writeQueueSize ?? 0];
}

/** Bytes written to `s` that its client has not taken (an upper bound). */
function pendingBytes(s: Socket): number {
  const [a, b, c] = queues(s);
  return Math.max(a, b, c);
}

/** most bytes of status line and headers queued ahead of a body */
const HEAD_ALLOWANCE = 64 * 1024;
const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
const EXEMPT = new Set(['/healthz']);

export function installConnectionBounds(app: FastifyInstance, o: ConnectionBoundsOptions): void {
  const perClient = o.perClientBytes ?? IN_FLIGHT.perClient;
  const total = o.totalBytes ?? IN_FLIGHT.total;
  const watched = new Map<Socket, Watched>();
  const log = app.log as FastifyBaseLogger;

  const check = () => {
    const now = performance.now();
    for (const [s, w] of watched) {
      if (s.destroyed) {
        watched.delete(s);
        continue;
      }
      const q = queues(s);
      if (q[0] === 0 && q[1] === 0 && q[2] === 0) {
        w.sig = '';
        w.since = now;
        continue;
      }
      const sig = q.join(':');
      if (sig !== w.sig) {
        w.sig = sig;
        w.since = now;
      } else if (now - w.since >= o.drainTimeoutMs) {
        guardCounts.drainCuts++;
        log.warn({ remote: w.key, pendingBytes: Math.max(...q), drainTimeout: formatDuration(o.drainTimeoutMs) }, 'connection cut: its client took none of its bytes within --drain-timeout');
        watched.delete(s);
        s.destroy();
      }
    }
  };
  // a cut comes between drainTimeout and drainTimeout + tick after the last byte taken
  const tick = Math.max(50, Math.min(1000, Math.floor(o.drainTimeoutMs / 4)));
  const timer = setInterval(check, tick);
  timer.unref();
  app.addHook('onClose', async () => clearInterval(timer));

  /** the answer body a plain socket is writing, when it may be the same Buffer as others' */
  const sharedBody = new WeakMap<Socket, Buffer>();
  /** bytes in flight of one client address and of all; a shared body counts once */
  const inFlight = (key: string) => {
    let mine = 0;
    let all = 0;
    const mineShared = new Map<Buffer, number>();
    const allShared = new Map<Buffer, number>();
    for (const [s, w] of watched) {
      if (s.destroyed) continue;
      const n = pendingBytes(s);
      const body = sharedBody.get(s);
      // the socket's queue may also hold the answer's head: a few KiB beyond the body
      if (body && n <= body.length + HEAD_ALLOWANCE) {
        allShared.set(body, Math.max(allShared.get(body) ?? 0, n));
        if (w.key === key) mineShared.set(body, Math.max(mineShared.get(body) ?? 0, n));
        continue;
      }
      all += n;
      if (w.key === key) mine += n;
    }
    for (const n of allShared.values()) all += n;
    for (const n of mineShared.values()) mine += n;
    return { mine, all };
  };
  const heldElsewhere = (body: Buffer) => {
    for (const s of watched.keys()) if (sharedBody.get(s) === body && !s.destroyed && pendingBytes(s) > 0) return true;
    return false;
  };
  const refuseClient = (mine: number) => {
    guardCounts.inFlightRefusals++;
    return new Problem('client_unread_limit', `this client (its address) has ${mib(mine)} of answers it has not read; at most ${mib(perClient)} are kept for one client: read them, then ask again`);
  };

  app.addHook('onRequest', async (req: FastifyRequest) => {
    const s = req.raw.socket;
    // app.inject's requests (a capture's) have a stand-in socket: nothing is written to a client there
    if (!(s instanceof Socket)) return;
    const key = s.remoteAddress ?? 'unknown';
    if (!watched.has(s)) {
      watched.set(s, { key, sig: '', since: performance.now() });
      s.once('close', () => watched.delete(s));
    }
    if (EXEMPT.has(req.routeOptions.url ?? '')) return;
    const { mine } = inFlight(key);
    if (mine > perClient) throw refuseClient(mine);
  });

  // after the shared body's onSend (registered before): the payload is the Buffer about to be written
  app.addHook('onSend', async (req, reply, payload) => {
    const size = typeof payload === 'string' ? Buffer.byteLength(payload) : Buffer.isBuffer(payload) ? payload.length : 0;
    if (size < IN_FLIGHT.small || reply.raw.destroyed || !(req.raw.socket instanceof Socket) || EXEMPT.has(req.routeOptions.url ?? '')) return payload;
    const s = req.raw.socket;
    const plain = Buffer.isBuffer(payload) && !(s as Socket & { encrypted?: boolean }).encrypted;
    const { mine, all } = inFlight(s.remoteAddress ?? 'unknown');
    // a body other sockets already hold adds nothing
    const adds = plain && heldElsewhere(payload as Buffer) ? 0 : size;
    if (mine > 0 && mine + adds > perClient) throw refuseClient(mine);
    if (all > 0 && all + adds > total) {
      guardCounts.inFlightRefusals++;
      throw new Problem('overloaded', `clients hold ${mib(all)} of answers they have not read; this one (${mib(size)}) would take the agent past ${mib(total)}; try again shortly`);
    }
    if (plain) {
      sharedBody.set(s, payload as Buffer);
      const done = () => sharedBody.delete(s);
      reply.raw.once('finish', done);
      reply.raw.once('close', done);
    }
    return payload;
  });
}
