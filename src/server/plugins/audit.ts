import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { REDACTED, redactText, SECRET_KEY } from '../../redact.js';
import { Reading } from '../../reading.js';
import { requestOutcome } from '../request-signal.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who asked, when --auth kubernetes is on (TokenReview username). */
    identity?: { user: string; groups: string[] };
    /** Extra fields for this request's audit line (a follow stream's end reason). */
    auditExtra?: Record<string, unknown>;
  }
}

/** Bounds of what one audit line carries from the request (every byte of it is the client's). */
const AUDIT_LIMITS = {
  /** characters of the raw query string looked at */
  maxQueryChars: 4096,
  /** query keys (and params) logged at most; the rest are counted */
  maxKeys: 32,
  maxKeyChars: 64,
  maxValueChars: 256,
  /** characters of the path logged for an unmatched route */
  maxPathChars: 256,
} as const;

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s);

/**
 * The query as the client sent it, bounded, with the value of every key that looks
 * like a secret (SECRET_KEY: token, access_token, password ...) redacted, and every
 * other value given the text rules (`x=Bearer …`, `u=https://user:pw@…`). Taken from
 * the raw URL, not req.query: a request refused by validation still has its secrets.
 */
function auditQuery(url: string): { query: Record<string, string | string[]>; omittedKeys?: number; queryTruncated?: true } {
  const q = url.indexOf('?');
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  if (q < 0) return { query: out };
  const raw = url.slice(q + 1);
  const text = raw.length > AUDIT_LIMITS.maxQueryChars ? raw.slice(0, AUDIT_LIMITS.maxQueryChars) : raw;
  let keys = 0;
  let omitted = 0;
  for (const pair of text.split('&', AUDIT_LIMITS.maxKeys * 8)) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const k = cut(decode(eq < 0 ? pair : pair.slice(0, eq)), AUDIT_LIMITS.maxKeyChars);
    const rawValue = eq < 0 ? '' : pair.slice(eq + 1);
    const v = SECRET_KEY.test(k) ? REDACTED : auditValue(decode(rawValue.slice(0, AUDIT_LIMITS.maxValueChars * 3 + 3)));
    const prev = out[k];
    if (prev === undefined) {
      if (keys >= AUDIT_LIMITS.maxKeys) {
        omitted++;
        continue;
      }
      keys++;
      out[k] = v;
    } else if (Array.isArray(prev)) {
      if (prev.length < AUDIT_LIMITS.maxKeys) prev.push(v);
      else omitted++;
    } else out[k] = [prev, v];
  }
  return {
    query: out,
    ...(omitted > 0 ? { omittedKeys: omitted } : {}),
    ...(raw.length > text.length ? { queryTruncated: true as const } : {}),
  };
}

/** Route params, bounded and redacted by the same rule. */
function auditParams(params: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!params || typeof params !== 'object') return out;
  let n = 0;
  for (const [k, v] of Object.entries(params as Record<string, unknown>)) {
    if (n++ >= AUDIT_LIMITS.maxKeys) break;
    out[cut(k, AUDIT_LIMITS.maxKeyChars)] = SECRET_KEY.test(k) ? REDACTED : auditValue(String(v));
  }
  return out;
}

/** A value for the audit line: redacted first (so a cut cannot hide a token's start from the rules), then cut. */
const auditValue = (v: string) => cut(redactText(v), AUDIT_LIMITS.maxValueChars);

function decode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

const kAudit = Symbol('nodetruth.audit');
interface AuditState {
  start: number;
  bytesBefore: number;
  written: boolean;
}
type WithAudit = FastifyRequest & { [kAudit]?: AuditState };

/**
 * One JSON audit line per request (DESIGN.md security model), exactly one, written
 * when the response's connection work is over ('close' on the response: answered
 * in full, cut by the deadline, or the client went away first; a follow stream
 * when it ends). fastify's onResponse does not fire when the client aborts, so the
 * line is written from 'close', guarded against a second write.
 * `outcome`: ok | client-gone | timeout | shutdown. Headers are never logged, and
 * secret-looking query values are redacted, so no bearer token reaches the log.
 *
 * Not audited one by one: the requests a capture injects into the app (bundle/capture.ts),
 * recognised by the capture's reading (src/reading.ts), which only code inside this process
 * can open — never a header or anything else a client sends. The capture's own request (GET
 * /v1/bundle) or command writes the one line, with how many answers it took.
 */
export function installAuditLog(app: FastifyInstance): void {
  app.addHook('onRequest', async (req, reply) => {
    const reading = Reading.current();
    if (reading?.capture) {
      reading.requests++;
      return;
    }
    const st: AuditState = { start: performance.now(), bytesBefore: req.raw.socket?.bytesWritten ?? 0, written: false };
    (req as WithAudit)[kAudit] = st;
    if (reply.raw.closed) writeAuditLine(req, reply);
    else reply.raw.once('close', () => writeAuditLine(req, reply));
  });
}

function writeAuditLine(req: FastifyRequest, reply: FastifyReply): void {
  const st = (req as WithAudit)[kAudit];
  if (!st || st.written) return;
  st.written = true;
  const finished = reply.raw.writableFinished;
  const outcome = requestOutcome(req) ?? (finished ? 'ok' : 'client-gone');
  const route = req.routeOptions.url ?? null;
  const { query, ...queryNotes } = auditQuery(req.url);
  req.log.info(
    {
      audit: {
        method: req.method,
        route,
        ...(route === null ? { path: cut(req.url.split('?')[0]!, AUDIT_LIMITS.maxPathChars) } : {}),
        params: auditParams(req.params),
        query,
        ...queryNotes,
        // no status when nothing was sent before the client went away
        status: reply.raw.headersSent ? reply.statusCode : null,
        outcome,
        ...(outcome !== 'ok' ? { aborted: true } : {}),
        bytes: (req.raw.socket?.bytesWritten ?? st.bytesBefore) - st.bytesBefore,
        durationMs: Math.round((performance.now() - st.start) * 100) / 100,
        user: req.identity?.user ?? null,
        remote: req.ip,
        ...req.auditExtra,
      },
    },
    'request',
  );
}

/**
 * An audit line for what never became a request: the HTTP parser refused it (431
 * headers too large, 400 malformed, 408 headers too slow). Only what is known
 * without trusting the bytes: the status and the peer.
 */
export function auditClientError(log: FastifyInstance['log'], status: number, code: string, remote: string | undefined): void {
  log.info({ audit: { method: null, route: null, params: {}, query: {}, status, outcome: 'refused-by-parser', error: code, bytes: 0, durationMs: 0, user: null, remote: remote ?? null } }, 'request');
}
