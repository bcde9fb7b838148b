import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { tooMany } from '../errors.js';
import type { AppDeps } from './deps.js';

/** At most `max` follow streams at once, across every kind (journal, kernel, container logs). */
export class FollowLimiter {
  active = 0;
  constructor(readonly max: number) {}

  /** Take a slot or throw 429; the returned release is idempotent. */
  acquire(): () => void {
    if (this.active >= this.max) throw tooMany(`at most ${this.max} follow streams at once (--max-follows); ${this.active} are open`);
    this.active++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.active--;
    };
  }
}

const limiters = new WeakMap<AppDeps, FollowLimiter>();
export function followLimiter(deps: AppDeps): FollowLimiter {
  let l = limiters.get(deps);
  if (!l) limiters.set(deps, (l = new FollowLimiter(deps.config.maxFollows)));
  return l;
}

export const wantsSse = (req: FastifyRequest) => /\btext\/event-stream\b/.test(req.headers.accept ?? '');

/**
 * Send a follow stream: NDJSON, or SSE when the client asks for text/event-stream.
 * `produce` gets a signal that aborts when the client goes away or the agent
 * shuts down; it must end (and reap whatever it started) when it does.
 * The follow slot is taken before anything is sent (429 otherwise) and given
 * back when the stream ends for any reason.
 */
export function sendFollow<T>(
  req: FastifyRequest,
  reply: FastifyReply,
  deps: AppDeps,
  produce: (signal: AbortSignal) => AsyncIterable<T>,
  release: () => void,
  event: (item: T) => string = () => 'record',
): FastifyReply {
  const ac = new AbortController();
  let stream: Readable | null = null;
  // the client went away (or the agent stops): stop the producer, end the
  // generators (their finally blocks reap children), give the slot back
  const abort = () => {
    ac.abort();
    stream?.destroy();
    cleanup();
  };
  const sse = wantsSse(req);
  const cleanup = () => {
    reply.raw.off('close', abort);
    deps.shutdown.removeEventListener('abort', abort);
    release();
  };
  reply.raw.on('close', abort);
  deps.shutdown.addEventListener('abort', abort, { once: true });
  async function* frames(): AsyncGenerator<string> {
    try {
      // fastify only set the headers; send them now so the client sees 200 before the first record
      if (!reply.raw.headersSent) reply.raw.flushHeaders();
      if (sse) yield ': nodetruth follow\n\n';
      for await (const item of produce(ac.signal)) {
        const json = JSON.stringify(item);
        yield sse ? `event: ${event(item)}\ndata: ${json}\n\n` : `${json}\n`;
      }
    } catch (err) {
      // headers are gone: the error can only travel in-band, as the last frame
      const msg = JSON.stringify({ error: (err as Error).message });
      yield sse ? `event: error\ndata: ${msg}\n\n` : `${msg}\n`;
    } finally {
      ac.abort();
      cleanup();
    }
  }
  stream = Readable.from(frames(), { objectMode: false });
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
