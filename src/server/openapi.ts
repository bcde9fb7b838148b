/**
 * GET /openapi.json without loading @fastify/swagger at start-up. The plugin and
 * its dependencies (yaml, json-schema-resolver, rfdc, …) cost start-up time and memory for
 * a document few clients ask for, so the app only keeps each route's options as it is
 * added (what the plugin's own onRoute hook keeps), and the first request builds the
 * document: a throwaway fastify instance with the plugin, the same routes replayed into
 * it with handlers that never run, `swagger()`, closed. The answer is then kept.
 */
import type { FastifyInstance, FastifyServerOptions, RouteOptions } from 'fastify';
import { VERSION } from '../version.js';
import { ERROR_CODES, problemCodesDescription } from '../errors.js';

/** fastify's `schemaController.compilersFactory` (typed by fastify as ajv's builders). */
export type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/** Keep the options of every route added to `app` after this call, for the document. */
export function collectRoutes(app: FastifyInstance): readonly RouteOptions[] {
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (r) => {
    routes.push(r);
  });
  return routes;
}

/** The OpenAPI document of `routes` (after the app is ready: every route is in it then). */
export async function openApiDocument(routes: readonly RouteOptions[]): Promise<unknown> {
  const [{ default: Fastify }, { default: swagger }, { jsonSchemaTransform }] = await Promise.all([import('fastify'), import('@fastify/swagger'), import('fastify-type-provider-zod')]);
  // The zod schemas are only read by the transform: nothing is compiled or validated here
  // (factories, so fastify loads no ajv either; typed as ajv's by fastify). HEAD routes are
  // replayed as they were collected (the plugin leaves them out), so none is made here.
  const compilersFactory = { buildValidator: () => () => () => true, buildSerializer: () => () => (data: unknown) => JSON.stringify(data) };
  const doc = Fastify({ logger: false, exposeHeadRoutes: false, schemaController: { compilersFactory: compilersFactory as unknown as CompilersFactory } });
  try {
    await doc.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'nodetruth',
          version: VERSION,
          description: `Read-only view of a Kubernetes node below the API server: CRI runtime, cgroup v2, /proc, journal, kernel log.\n\nErrors are application/problem+json; every one carries a stable \`code\` of this table:\n${problemCodesDescription()}`,
        },
      },
      transform: jsonSchemaTransform,
    });
    const never = async () => {
      throw new Error('not served');
    };
    for (const r of routes) doc.route({ method: r.method, url: r.url, ...(r.schema ? { schema: r.schema } : {}), ...(r.config ? { config: r.config } : {}), handler: never });
    await doc.ready();
    return withAnswers(doc.swagger() as OpenApi, routes);
  } finally {
    await doc.close();
  }
}

interface Operation {
  parameters?: { name: string }[];
  responses?: Record<string, { description: string; content?: Record<string, unknown> }>;
}
interface OpenApi {
  components?: { schemas?: Record<string, unknown> };
  paths: Record<string, Record<string, Operation>>;
}

/** The body of every error answer (src/errors.ts): RFC 9457 fields and the code. */
const PROBLEM_SCHEMA = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string', description: 'https://nodetruth.dev/problems/<the title slug>' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string', description: 'what happened, for a person' },
    instance: { type: 'string', description: 'the path asked for' },
    code: { type: 'string', enum: ERROR_CODES, description: 'stable; several codes share a status and title' },
    param: { type: 'string', description: 'the refused parameter (400)' },
    errors: { type: 'array', items: { type: 'string' }, description: 'every validation reason (400)' },
    candidates: { type: 'array', items: { type: 'string' }, description: 'some ids an ambiguous prefix matches (409)' },
  },
};

/**
 * What each route answers: its 200 (JSON; a text table with ?format=text where the
 * route has one; a follow stream where it takes follow; or the route's own
 * `config.answer`), and every error as problem+json by the one code table.
 */
function withAnswers(doc: OpenApi, routes: readonly RouteOptions[]): OpenApi {
  doc.components = { ...doc.components, schemas: { ...doc.components?.schemas, Problem: PROBLEM_SCHEMA } };
  for (const r of routes) {
    const path = r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const op = doc.paths[path]?.get;
    if (!op) continue;
    const config = (r.config ?? {}) as { answer?: string; table?: unknown };
    const follow = op.parameters?.some((p) => p.name === 'follow') ? '; with follow=true an NDJSON stream (server-sent events with Accept: text/event-stream)' : '';
    const description = config.answer ?? `JSON${config.table ? ', or an aligned text table with ?format=text' : ''}${follow}`;
    op.responses = {
      ...op.responses,
      200: { ...op.responses?.['200'], description },
      default: { description: 'application/problem+json with a `code` from the error table', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } },
    };
  }
  return doc;
}
