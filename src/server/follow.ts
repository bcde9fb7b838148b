import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { formatDuration } from '../format.js';
import { Problem } from '../errors.js';
import type { AppDeps } from './app.js';
import { exemptFromDeadline } from './request-signal.js';

/** At most `max` follow streams at once, across every kind (journal, kernel, container logs). */
class FollowLimiter {
  active = 0;
  constructor(readonly max: number) {}

  /** Take a slot or throw 429; the returned release is idempotent. */
  acquire(): () => void {
    if (this.active >= this.max) throw new Problem('too_many_follows', `at most ${this.max} follow streams at once (--max-follows); ${this.active} are open`);
    this.active++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.active--;
    };
  }
}

/**
 * At most `max` follow streams per client key: the remote address, and under
 * --auth kubernetes also the user (one user from many addresses, or many users
 * behind one proxy, are each held to it). Behind `kubectl port-forward` every
 * client has the address 127.0.0.1, so there it caps all port-forward clients together.
 */
class PerClientFollowLimiter {
  private readonly open = new Map<string, number>();
  constructor(readonly max: number) {}

  acquire(keys: string[]): () => void {
    for (const k of keys) {
      const n = this.open.get(k) ?? 0;
      if (n >= this.max) throw new Problem('too_many_follows', `at most ${this.max} follow streams per client (--max-follows-per-client); ${k} has ${n} open`);
    }
    for (const k of keys) this.open.set(k, (this.open.get(k) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      for (const k of keys) {
        const n = (this.open.get(k) ?? 1) - 1;
        if (n <= 0) this.open.delete(k);
        else this.open.set(k, n);
      }
    };
  }
}

const limiters = new WeakMap<AppDeps, FollowLimiter>();
export function followLimiter(deps: AppDeps): FollowLimiter {
  let l = limiters.get(deps);
  if (!l) limiters.set(deps, (l = new FollowLimiter(deps.config.maxFollows)));
  return l;
}

const perClient = new WeakMap<AppDeps, PerClientFollowLimiter>();
function perClientFollowLimiter(deps: AppDeps): PerClientFollowLimiter {
  let l = perClient.get(deps);
  if (!l) perClient.set(deps, (l = new PerClientFollowLimiter(deps.config.maxFollowsPerClient)));
  return l;
}

/** The keys a request's follow counts against. */
function followClientKeys(req: FastifyRequest): string[] {
  const keys = [`address ${req.ip ?? 'unknown'}`];
  if (req.identity) keys.push(`user ${JSON.stringify(req.identity.user)}`);
  return keys;
}

/** Why a follow stream ended on the agent's side; the last frame says it. */
type FollowEnd = 'max-duration' | 'shutdown';

const wantsSse = (req: FastifyRequest) => /\btext\/event-stream\b/.test(req.headers.accept ?? '');

/**
 * Send a follow stream: NDJSON, or SSE when the client asks for text/event-stream.
 * `produce` gets a signal that aborts when the client goes away, the agent shuts
 * down, or the stream reaches --follow-max; it must end (and reap whatever it
 * started) when it does. The global slot (`release`, taken by the route) and a
 * per-client slot (taken here: 429 otherwise) are given back when the stream ends
 * for any reason. A stream the agent ends (maximum duration, shutdown) closes
 * with a final in-band frame `{"end": reason, "detail": ...}` (SSE: `event: end`).
 */
export function sendFollow<T>(
  req: FastifyRequest,
  reply: FastifyReply,
  deps: AppDeps,
  produce: (signal: AbortSignal) => AsyncIterable<T>,
  release: () => void,
  event: (item: T) => string = () => 'record',
): FastifyReply {
  let releaseClient: () => void;
  try {
    releaseClient = perClientFollowLimiter(deps).acquire(followClientKeys(req));
  } catch (err) {
    release();
    throw err;
  }
  exemptFromDeadline(req); // a follow has its own bound: --follow-max
  const ac = new AbortController();
  let stream: Readable | null = null;
  let ended: FollowEnd | null = null;
  const sse = wantsSse(req);
  const maxMs = deps.config.followMax;
  // the client went away: stop the producer, end the generators (their finally
  // blocks reap children), give the slots back
  const gone = () => {
    ac.abort();
    stream?.destroy();
    cleanup();
  };
  // the agent ends the stream: stop the producer, then say why in a last frame
  const endBy = (why: FollowEnd) => {
    if (ended !== null) return;
    ended = why;
    ac.abort();
    // a producer that does not end on its signal must not hold the stream (or shutdown)
    safety = setTimeout(gone, 1000);
    safety.unref();
  };
  const onShutdown = () => endBy('shutdown');
  const maxTimer = setTimeout(() => endBy('max-duration'), maxMs);
  let safety: NodeJS.Timeout | null = null;
  const cleanup = () => {
    clearTimeout(maxTimer);
    if (safety) clearTimeout(safety);
    reply.raw.off('close', gone);
    deps.shutdown.removeEventListener('abort', onShutdown);
    releaseClient();
    release();
  };
  reply.raw.on('close', gone);
  if (deps.shutdown.aborted) endBy('shutdown');
  else deps.shutdown.addEventListener('abort', onShutdown, { once: true });
  const frame = (name: string, body: unknown) => {
    const json = JSON.stringify(body);
    return sse ? `event: ${name}\ndata: ${json}\n\n` : `${json}\n`;
  };
  // resolves when the agent ends the stream, so a producer waiting for its next item is not awaited
  const endedP = new Promise<null>((resolve) => ac.signal.addEventListener('abort', () => resolve(null), { once: true }));
  async function* frames(): AsyncGenerator<string> {
    const it = produce(ac.signal)[Symbol.asyncIterator]();
    try {
      // fastify only set the headers; send them now so the client sees 200 before the first record
      if (!reply.raw.headersSent) reply.raw.flushHeaders();
      if (sse) yield ': nodetruth follow\n\n';
      for (;;) {
        const r = await Promise.race([it.next(), endedP]);
        if (r === null || r.done) break;
        yield frame(event(r.value), r.value);
      }
    } catch (err) {
      // headers are gone: the error can only travel in-band, as the last frame
      if (ended === null) yield frame('error', { error: (err as Error).message });
    } finally {
      ac.abort();
      void Promise.resolve(it.return?.()).catch(() => undefined);
    }
    if (ended !== null) {
      req.auditExtra = { ...req.auditExtra, followEnd: ended };
      yield frame('end', {
        end: ended,
        detail:
          ended === 'max-duration'
            ? `follow streams last at most ${formatDuration(maxMs)} (--follow-max); reconnect to go on`
            : 'the agent is shutting down',
      });
    }
    cleanup();
  }
  stream = Readable.from(frames(), { objectMode: false });
  // the generator catches its producer's errors; what is left (a write after the client went away) ends the stream, never the process
  stream.on('error', () => ac.abort());
  stream.on('close', () => {
    ac.abort();
    cleanup();
  });
  return reply
    .header('content-type', sse ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson; charset=utf-8')
    .header('cache-control', 'no-cache')
    .header('x-accel-buffering', 'no')
    .send(stream);
}
