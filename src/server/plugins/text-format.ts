import type { FastifyInstance, FastifyRequest } from 'fastify';
import { escapeTerminal } from '../../format.js';
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

/**
 * Routes return data; this hook renders it as a table when the client asked for text.
 * A text answer is read on a terminal: a table escapes its cells (server/table.ts), a
 * route that renders its own text escapes its fields, and the whole answer passes
 * escapeTerminal once more here with its line breaks kept, so no route, however it
 * renders, can send a control character other than the newline between its lines.
 */
export function installTextFormat(app: FastifyInstance): void {
  app.addHook('preSerialization', async (req, reply, payload) => {
    const table = req.routeOptions.config.table;
    if (!table || reply.statusCode >= 400 || !wantsText(req)) return payload;
    const rendered = (table as (b: unknown) => Table | string)(payload);
    reply.type('text/plain; charset=utf-8').serializer((p: unknown) => p as string);
    return escapeTerminal(typeof rendered === 'string' ? rendered : renderTable(rendered), { keepNewlines: true });
  });
}
