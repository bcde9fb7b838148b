import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isProblem, Problem } from '../../errors.js';
import { isSourceError } from '../../readers/errors.js';
import { problemOf } from '../problem-types.js';

/**
 * Every failure leaves as RFC 9457 application/problem+json: our own Problems,
 * sources' SourceErrors (by their code, through server/problem-types.ts),
 * schema validation failures (400 with the reason), fastify's own 4xx errors,
 * unknown routes (404). Anything else is a bug: a 500 that says so without
 * leaking internals, and a log line with the stack.
 */
export function installProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const problem = toProblem(err);
    if (problem.status >= 500 && !isProblem(err) && !isSourceError(err)) req.log.error({ err }, 'unhandled error');
    return sendProblem(req, reply, problem);
  });
  app.setNotFoundHandler((req, reply) =>
    sendProblem(req, reply, new Problem(404, 'Not found', `no route ${req.method} ${req.url.split('?')[0]}; see /openapi.json`)),
  );
}

function toProblem(err: FastifyError): Problem {
  if (isProblem(err)) return err;
  if (isSourceError(err)) return problemOf(err);
  if (hasZodFastifySchemaValidationErrors(err)) {
    const where = err.validationContext ?? 'request';
    const reasons = err.validation.map((v) => {
      const field = v.instancePath.replace(/^\//, '').replace(/\//g, '.');
      return `${where}${field ? `.${field}` : ''}: ${v.message}`;
    });
    return new Problem(400, 'Invalid input', reasons.join('; '), { errors: reasons });
  }
  if (err.validation) return new Problem(400, 'Invalid input', err.message);
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) return new Problem(status, 'Bad request', err.message);
  return new Problem(500, 'Internal error', 'nodetruth failed unexpectedly; the agent log has the details');
}

export function problemBody(req: FastifyRequest, p: Problem): Record<string, unknown> {
  return { type: p.type, title: p.title, status: p.status, detail: p.message, instance: req.url.split('?')[0], ...p.extra };
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
