/**
 * One AbortSignal per request that says "stop working on this": the client went
 * away, the server-side deadline passed (--request-timeout), or the agent is
 * shutting down and the grace for in-flight work is over.
 *
 *   requestSignal(req)   the signal; pass it to every source the route calls
 *   requestOutcome(req)  why it aborted (null while it has not): the audit line says it
 *   exemptFromDeadline   follow streams: they have their own maximum (--follow-max)
 *
 * When the deadline passes before an answer was sent, the request is answered
 * here, for itself: 504 problem+json (503 when the agent is shutting down), and
 * the route's late answer, if it ever comes, is dropped by fastify. When the
 * answer had already started (a streamed body), the connection is cut: a
 * truncated body must not look complete.
 *
 * Why 35 s by default: the longest deadline of a source is the journal's 30 s
 * (JOURNAL_LIMITS.deadlineMs, kubelet's own), which answers 504 with its own,
 * more precise reason; the route deadline sits a little above it so that it
 * catches only what has no deadline of its own, and never races the journal's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Problem } from '../errors.js';
import { sendProblem } from './plugins/problems.js';

type RequestOutcome = 'client-gone' | 'timeout' | 'shutdown';

interface State {
  ac: AbortController;
  outcome: RequestOutcome | null;
  timer: NodeJS.Timeout | null;
  reply: FastifyReply;
  exempt: boolean;
}

const kState = Symbol('nodetruth.requestState');
type WithState = FastifyRequest & { [kState]?: State };

interface DeadlineOptions {
  /** --request-timeout */
  timeoutMs: number;
  /** the agent's shutdown signal */
  shutdown: AbortSignal;
  /** after shutdown, how long in-flight requests may still take before they are cut */
  shutdownGraceMs: number;
}

/** A request the deadline plugin never saw (an app built without it): the signal aborts only when the connection closes. */
function lateState(req: FastifyRequest): State {
  const ac = new AbortController();
  const st: State = { ac, outcome: null, timer: null, reply: null as unknown as FastifyReply, exempt: true };
  req.raw.socket?.once('close', () => ac.abort(new Problem('client_closed', 'the connection closed')));
  (req as WithState)[kState] = st;
  return st;
}

/** Aborts when the client goes away, the deadline passes, or the shutdown grace is over. */
export function requestSignal(req: FastifyRequest): AbortSignal {
  return ((req as WithState)[kState] ?? lateState(req)).ac.signal;
}

/** Why the request's work was stopped, or null (answered normally, so far). */
export function requestOutcome(req: FastifyRequest): RequestOutcome | null {
  return (req as WithState)[kState]?.outcome ?? null;
}

/** A follow stream: no request deadline (it has --follow-max); client-gone and shutdown still abort it. */
export function exemptFromDeadline(req: FastifyRequest): void {
  const st = (req as WithState)[kState];
  if (!st) return;
  st.exempt = true;
  if (st.timer) clearTimeout(st.timer);
  st.timer = null;
}

export function installRequestDeadline(app: FastifyInstance, o: DeadlineOptions): void {
  const live = new Set<State>();
  const cut = (st: State, req: FastifyRequest, outcome: 'timeout' | 'shutdown') => {
    if (st.outcome !== null) return;
    st.outcome = outcome;
    if (st.timer) clearTimeout(st.timer);
    st.timer = null;
    const problem =
      outcome === 'timeout'
        ? new Problem('request_timeout', `no answer within ${o.timeoutMs} ms (--request-timeout); the work was cancelled`)
        : new Problem('shutting_down', `the agent is shutting down; this request did not finish within the ${o.shutdownGraceMs} ms grace`);
    st.ac.abort(problem);
    const reply = st.reply;
    if (reply.sent || reply.raw.writableEnded) return;
    if (reply.raw.headersSent) {
      reply.raw.destroy(); // a streamed answer cut short must not look complete
      return;
    }
    sendProblem(req, reply, problem);
  };
  const onShutdown = () => {
    for (const st of live) {
      if (st.outcome !== null) continue;
      if (st.timer) clearTimeout(st.timer);
      const req = (st.reply as FastifyReply).request;
      // follow streams end on the shutdown signal themselves (with a final frame)
      st.timer = st.exempt ? null : setTimeout(() => cut(st, req, 'shutdown'), o.shutdownGraceMs);
      if (st.exempt) st.ac.abort(new Problem('shutting_down', 'the agent is shutting down'));
    }
  };
  if (o.shutdown.aborted) onShutdown();
  else o.shutdown.addEventListener('abort', onShutdown, { once: true });

  app.addHook('onRequest', async (req, reply) => {
    const st: State = { ac: new AbortController(), outcome: null, timer: null, reply, exempt: false };
    (req as WithState)[kState] = st;
    live.add(st);
    const ms = o.shutdown.aborted ? Math.min(o.timeoutMs, o.shutdownGraceMs) : o.timeoutMs;
    st.timer = setTimeout(() => cut(st, req, o.shutdown.aborted ? 'shutdown' : 'timeout'), ms);
    // 'close' on the response: sent in full, or the connection ended first
    reply.raw.once('close', () => {
      live.delete(st);
      if (st.timer) clearTimeout(st.timer);
      st.timer = null;
      if (!reply.raw.writableFinished && st.outcome === null) {
        st.outcome = 'client-gone';
        st.ac.abort(new Problem('client_closed', 'the client went away before the answer'));
      }
    });
  });
}

/**
 * After SIGTERM, how long in-flight requests may still take before they are cut
 * with 503: the agent must be gone within 5 s (kubelet's grace is longer, but a
 * debug pod's `attach` and a rolling update wait on it), with room after the cut
 * for the answers to go out and the process to exit.
 */
export const SHUTDOWN_GRACE_MS = 3000;
