import type { FastifyInstance, FastifyRequest } from 'fastify';
import { renderTable, type Table } from '../table.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** How this route's JSON body looks as a text table (?format=text or Accept: text/plain). */
    table?: (body: never) => Table | string;
  }
}

export function wantsText(req: FastifyRequest): boolean {
  const q = req.query as Record<string, unknown> | undefined;
  if (q && q.format === 'text') return true;
  if (q && q.format === 'json') return false;
  const accept = req.headers.accept ?? '';
  return /^text\/plain\b/.test(accept);
}

/** Routes return data; this hook renders it as a table when the client asked for text. */
export function installTextFormat(app: FastifyInstance): void {
  app.addHook('preSerialization', async (req, reply, payload) => {
    const table = req.routeOptions.config.table;
    if (!table || reply.statusCode >= 400 || !wantsText(req)) return payload;
    const rendered = (table as (b: unknown) => Table | string)(payload);
    reply.type('text/plain; charset=utf-8').serializer((p: unknown) => p as string);
    return typeof rendered === 'string' ? rendered : renderTable(rendered);
  });
}
