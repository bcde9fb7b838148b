import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isProblem, Problem, problemOf, type ErrorCode } from '../../errors.js';
import { isSourceError } from '../../readers/errors.js';

/**
 * Every failure leaves as RFC 9457 application/problem+json with its `code` from
 * the one table (src/errors.ts): our own Problems, sources' SourceErrors, schema
 * validation failures (400 bad_parameter with the reasons), fastify's own 4xx
 * errors, unknown routes (404 no_route). Anything else is a bug: a 500 that says
 * so without leaking internals, and a log line with the stack.
 */
export function installProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const problem = toProblem(err);
    if (problem.status >= 500 && !isProblem(err) && !isSourceError(err)) req.log.error({ err }, 'unhandled error');
    return sendProblem(req, reply, problem);
  });
  app.setNotFoundHandler((req, reply) => sendProblem(req, reply, new Problem('no_route', `no route ${req.method} ${req.url.split('?')[0]}; see /openapi.json`)));
}

/**
 * fastify's `frameworkErrors`: what its router refuses before any route or hook (a URL
 * fastify cannot decode, a path parameter past maxParamLength), from the same table.
 * The detail does not echo the path: it is what was too long or malformed.
 */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const detail =
    err.code === 'FST_ERR_BAD_URL'
      ? 'the URL is not valid: a percent-encoding that does not decode'
      : err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? 'a path parameter is longer than the router reads (16 KiB)'
        : 'the request was refused before any route saw it';
  const status = err.statusCode ?? 400;
  sendProblem(req, reply, new Problem(status >= 500 ? 'internal_error' : (FASTIFY_4XX[status] ?? 'malformed_request'), detail));
}

/** fastify's own refusals by status; any other 4xx of fastify's is a malformed request. */
const FASTIFY_4XX: Record<number, ErrorCode> = { 404: 'no_route', 413: 'content_too_large', 414: 'uri_too_long', 415: 'unsupported_media_type' };

function toProblem(err: FastifyError): Problem {
  if (isProblem(err)) return err;
  if (isSourceError(err)) return problemOf(err);
  if (hasZodFastifySchemaValidationErrors(err)) {
    const where = err.validationContext ?? 'request';
    const fields = err.validation.map((v) => v.instancePath.replace(/^\//, '').replace(/\//g, '.'));
    const reasons = err.validation.map((v, i) => `${where}${fields[i] ? `.${fields[i]}` : ''}: ${v.message}`);
    // the parameter: the top-level name of the first field refused (a repeated one's index dropped), or the first unknown one
    const unknown = err.validation.flatMap((v) => (v.keyword === 'unrecognized_keys' && Array.isArray(v.params.keys) ? (v.params.keys as unknown[]).map(String) : []));
    const param = fields.find((f) => f !== '')?.split('.')[0] ?? unknown[0];
    return new Problem('bad_parameter', reasons.join('; '), { ...(param ? { param } : {}), errors: reasons });
  }
  if (err.validation) return new Problem('bad_parameter', err.message);
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) return new Problem(FASTIFY_4XX[status] ?? 'malformed_request', err.message);
  return new Problem('internal_error', 'nodetruth failed unexpectedly; the agent log has the details');
}

function problemBody(req: FastifyRequest | null, p: Problem): Record<string, unknown> {
  return { type: p.type, title: p.title, status: p.status, detail: p.message, ...(req ? { instance: req.url.split('?')[0] } : {}), code: p.code, ...p.extra };
}

export function sendProblem(req: FastifyRequest, reply: FastifyReply, p: Problem): FastifyReply {
  if (reply.sent) return reply;
  if (p.headers) reply.headers(p.headers);
  return reply
    .code(p.status)
    .type('application/problem+json; charset=utf-8')
    .serializer(JSON.stringify)
    .send(problemBody(req, p));
}

/**
 * What the HTTP parser refused before it was a request (431 headers too large, 408 too
 * slow, 400 malformed), as a whole HTTP/1.1 answer to write on the socket before closing it.
 */
export function clientErrorAnswer(err: NodeJS.ErrnoException, detail?: string, headers: Record<string, string> = {}): { problem: Problem; raw: string } {
  const problem =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new Problem('headers_too_large', detail ?? 'the request headers exceed 16 KiB')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new Problem('request_header_timeout', detail ?? 'the request did not arrive within 15 s')
        : new Problem('malformed_request', detail ?? 'the request is not valid HTTP/1.1');
  const body = JSON.stringify(problemBody(null, problem));
  const more = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  const raw = `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${more}Connection: close\r\n\r\n${body}`;
  return { problem, raw };
}
