/**
 * Past a bound of concurrent heavy work, answer 503 with Retry-After instead of queueing
 * without limit.
 *
 * Heavy routes are the answers whose cost grows with the node (every container, every
 * cgroup, every series) or with what tenants wrote (the kernel log's records: a /v1/kernel
 * answer of a large ring is MBs once rendered). The journal's queries have their own bound
 * (at most JOURNAL_LIMITS.maxChildren journalctl children, 429 beyond, and bytes per answer).
 * Measured on the FAKE 1,000-container node, one of them holds tens of MiB while it is
 * built (bench/RESULTS.md), so fifty at once take the agent to 700 MiB, and four kernel
 * answers built at once keep /healthz waiting for most of a second. Light routes (health,
 * one container, the node's own files, the journal) and follow streams never wait here.
 *
 * A slot bounds new work only. A request that `joins` (its reading has made, or is making,
 * the very answer it asks for: src/server/plugins/reading.ts) takes none and never waits:
 * it costs the bytes of an answer already made. Up to `running` other heavy requests run;
 * up to `queued` more wait, in order, at most `maxWaitMs`; past that the answer is 503 with
 * Retry-After, at once. A waiter is asked again whether it joins each time a slot is given
 * back (that is when answers are finished) and once the requests then admitted have started
 * theirs. A waiting request whose client went away leaves the queue.
 *
 * A slot is given back when its request ends, however it ends: the answer handed to the
 * socket (onSend: the heavy work is done; what is still unsent is bounded by
 * src/server/connections.ts, not by a slot), the response finished or closed (the client
 * gone, an error, a deadline's cut). A request whose response closed before it reached this
 * hook (its client went away during an earlier one, such as a TokenReview) takes no slot:
 * its 'close' has been emitted and would never give the slot back.
 *
 * The requests a capture injects (bundle/routes.ts) take slots like any, so a capture holds no
 * more full-node answers at once than clients can (the debug pod's heap is sized by that), but
 * they are never shed: they wait as long as it takes, outside the queue's bound (a capture
 * injects at most CAPTURE_LIMITS.concurrency at once, one capture at a time), because a bundle
 * whose heavy answers were 503s is a bundle of nothing and its own deadline bounds it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Problem } from '../../errors.js';
import { Reading } from '../../reading.js';

interface LoadShedOptions {
  /** heavy requests making new answers at once */
  running: number;
  /** heavy requests waiting for a slot */
  queued: number;
  /** longest wait for a slot before 503 */
  maxWaitMs: number;
  /** the routes (as declared: '/v1/cgroups') that take a slot */
  routes: ReadonlySet<string>;
  /** true when the request's answer is made (or being made) already: it takes no slot */
  joins: (req: FastifyRequest, reply: FastifyReply) => boolean;
}

export const LOAD_SHED_DEFAULTS: LoadShedOptions = {
  running: 2,
  queued: 128,
  maxWaitMs: 5_000,
  routes: new Set(['/metrics', '/v1/containers', '/v1/cgroups', '/v1/pods', '/v1/throttling', '/v1/oom', '/v1/triage', '/v1/node/drift', '/v1/kernel']),
  joins: () => false,
};

/**
 * A follow stream lasts up to --follow-max and builds nothing large (its own limiter
 * bounds how many run): it must not hold a slot that whole time.
 */
const isFollow = (req: FastifyRequest) => {
  const f = (req.query as Record<string, unknown> | undefined)?.follow;
  return f === 'true' || f === '1';
};

interface Waiter {
  /** admitted as a joiner (no slot) or with a slot */
  admit(slot: boolean): void;
  joins(): boolean;
}

const overloaded = (detail: string) => new Problem('overloaded', detail);

export function installLoadShed(app: FastifyInstance, options: Partial<LoadShedOptions> = {}): void {
  const o = { ...LOAD_SHED_DEFAULTS, ...options };
  const queue: Waiter[] = [];
  let running = 0;

  /** in order: a waiter whose answer now exists joins it; others take the slots free (`slots`) */
  const admit = (slots: boolean) => {
    let admitted = false;
    for (let i = 0; i < queue.length; ) {
      const w = queue[i]!;
      const joins = w.joins();
      if (joins || (slots && running < o.running)) {
        queue.splice(i, 1);
        if (!joins) running++;
        admitted ||= !joins;
        w.admit(!joins);
      } else i++;
    }
    // a request admitted with a slot starts its answer once its hooks have run: the waiters
    // identical to it can join it then, without waiting for the next slot
    if (admitted) setImmediate(() => admit(false));
  };
  const release = () => {
    running--;
    admit(true);
  };

  const holders = new WeakMap<FastifyRequest, () => void>();
  app.addHook('onRequest', async (req: FastifyRequest, reply) => {
    const route = req.routeOptions.url ?? '';
    if (!o.routes.has(route) || isFollow(req)) return;
    const capture = Reading.current()?.capture === true;
    const hold = () => {
      let released = false;
      const give = () => {
        if (released) return;
        released = true;
        reply.raw.off('close', give);
        reply.raw.off('finish', give);
        holders.delete(req);
        release();
      };
      holders.set(req, give);
      reply.raw.once('close', give);
      reply.raw.once('finish', give);
      // closed already (between the check below and now nothing can close it: no await)
      if (reply.raw.destroyed) give();
    };
    if (reply.raw.destroyed || req.raw.socket?.destroyed) throw clientGone();
    if (o.joins(req, reply)) return;
    if (running < o.running) {
      running++;
      hold();
      return;
    }
    if (!capture && queue.length >= o.queued) throw overloaded(`${running} full-node answers are being built and ${queue.length} wait; try again shortly`);
    await new Promise<void>((resolve, reject) => {
      const w: Waiter = {
        joins: () => !reply.raw.destroyed && o.joins(req, reply),
        admit: (slot) => {
          clearTimeout(timer);
          reply.raw.off('close', gone);
          if (slot) hold();
          resolve();
        },
      };
      const leave = () => {
        const i = queue.indexOf(w);
        if (i >= 0) queue.splice(i, 1);
      };
      const timer = capture
        ? undefined
        : setTimeout(() => {
            leave();
            reply.raw.off('close', gone);
            reject(overloaded(`waited ${o.maxWaitMs} ms for one of ${o.running} slots for full-node answers; try again shortly`));
          }, o.maxWaitMs);
      // the response closing before anything was written: the client went away while waiting
      const gone = () => {
        clearTimeout(timer);
        leave();
        reject(overloaded('the client went away while waiting'));
      };
      reply.raw.once('close', gone);
      queue.push(w);
    });
  });
  // the answer is built and about to be written: the heavy work the slot bounds is over
  app.addHook('onSend', async (req, _reply, payload) => {
    holders.get(req)?.();
    return payload;
  });
}

const clientGone = () => new Problem('client_closed', 'the client went away before its request was admitted');
