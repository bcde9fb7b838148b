/**
 * --session-token (NODETRUTH_SESSION_TOKEN): the per-session secret of an `attach` debug pod.
 *
 * The debug pod shares the node's network namespace, so the agent's loopback port is the
 * node's: without this, every host-network pod and process on the node could use the
 * session's API for as long as the pod lives. `nodetruth attach` makes a random token,
 * gives it to the agent through the pod spec and sends it on every request in
 * SESSION_HEADER; it never shows it to anyone (src/launcher/proxy.ts adds it).
 *
 * When the token is set, every request but GET/HEAD /healthz (the kubelet's readiness
 * probe cannot send one) must carry it, unknown routes included; anything else is 401
 * before any route, review or load-shed slot is spent on it. The comparison is in
 * constant time over SHA-256 digests of equal length, so neither the token's length nor
 * a prefix leaks through timing. The token is never logged: the audit line carries no
 * headers (plugins/audit.ts), and the refusal does not echo what was sent.
 * Authorization stays plugins/auth.ts's: the two can be on together.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AppDeps } from '../app.js';
import { Problem } from '../../errors.js';

/** The request header that carries the session token (lower case, as Node gives headers). */
export const SESSION_HEADER = 'x-nodetruth-session';

/** Routes answered without the session token, by route pattern: the readiness probe's. */
const SESSION_OPEN_ROUTES: ReadonlySet<string> = new Set(['/healthz']);

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Installs the onRequest hook; a no-op without --session-token. */
export function installSessionSecret(app: FastifyInstance, deps: Pick<AppDeps, 'config'>): void {
  const token = deps.config.sessionToken;
  if (token === null) return;
  const expected = digest(token);
  app.addHook('onRequest', async (req, reply) => {
    if ((req.method === 'GET' || req.method === 'HEAD') && req.routeOptions.url !== undefined && SESSION_OPEN_ROUTES.has(req.routeOptions.url)) return;
    const sent = req.headers[SESSION_HEADER];
    // a header sent twice arrives joined ("a, b") and never matches; an array cannot happen for it
    if (typeof sent === 'string' && sent.length <= 1024 && timingSafeEqual(digest(sent), expected)) return;
    reply.header('www-authenticate', 'Nodetruth-Session realm="nodetruth"');
    throw new Problem(
      'session_required',
      typeof sent === 'string'
        ? `the ${SESSION_HEADER} header does not match this session's token`
        : `this agent serves one attach session: every request but /healthz needs its token in the ${SESSION_HEADER} header (nodetruth attach sends it)`,
    );
  });
}
