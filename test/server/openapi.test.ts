/**
 * /openapi.json is built on its first request (src/server/openapi.ts): the app
 * loads no @fastify/swagger before it serves, nor the bundle's tar code nor ajv, and the
 * document still lists every route with its zod-derived parameters, the same on every
 * request. Through the real HTTP server.
 */
import { createRequire } from 'node:module';
import t from 'tap';
import { testApp } from '../helpers/app.js';

const require = createRequire(import.meta.url);
/** CommonJS packages loaded into this process so far (an ES module's import of one lands here too). */
const loaded = (pkg: string) => Object.keys(require.cache).some((k) => k.includes(`/node_modules/${pkg}/`));

const a = await testApp(['--host-root', '/nonexistent-host', '--cri-endpoint', 'unix:///nonexistent/cri.sock']);
t.teardown(() => a.close());
await a.app.listen({ port: 0, host: '127.0.0.1' });
const { port } = a.app.server.address() as { port: number };
const get = (p: string) => fetch(`http://127.0.0.1:${port}${p}`);

t.test('nothing of the document or the bundle is loaded before a request asks for it', async (t) => {
  t.notOk(loaded('@fastify/swagger'), '@fastify/swagger not loaded');
  t.notOk(loaded('tar-stream'), 'tar-stream not loaded');
  t.notOk(loaded('ajv'), 'no ajv: the zod compilers are fastify\'s compiler factories');
  const res = await get('/healthz');
  t.equal(res.status, 200);
  t.notOk(loaded('@fastify/swagger'), 'still not loaded after another route answered');
});

t.test('the first request builds it: every route, with the parameters of its zod schema', async (t) => {
  const res = await get('/openapi.json');
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/json/);
  const doc = (await res.json()) as { openapi: string; info: { title: string; description: string }; paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>> };
  t.equal(doc.openapi, '3.0.3');
  t.equal(doc.info.title, 'nodetruth');
  t.match(doc.info.description, /stable `code`/);
  t.ok(loaded('@fastify/swagger'), 'loaded now');
  for (const p of ['/healthz', '/readyz', '/metrics', '/v1/containers', '/v1/containers/{id}', '/v1/cgroups', '/v1/triage', '/v1/bundle', '/v1/node', '/v1/node/drift']) t.ok(doc.paths[p]?.get, `${p} documented`);
  t.notOk(doc.paths['/openapi.json'], 'the document itself is hidden');
  for (const [p, ops] of Object.entries(doc.paths)) {
    t.same(Object.keys(ops), ['get'], `${p}: GET only (no HEAD twin)`);
    t.ok(a.app.hasRoute({ method: 'GET', url: p.replace(/\{(\w+)\}/g, ':$1') }), `${p} is a route of the app`);
  }
  t.same(doc.paths['/v1/bundle']!.get!.parameters!.map((x) => `${x.in}:${x.name}`).sort(), ['query:format', 'query:maxSize', 'query:since']);
  t.same(doc.paths['/v1/triage']!.get!.parameters!.map((x) => x.name).sort(), ['format', 'window']);
  t.same(doc.paths['/v1/containers/{id}']!.get!.parameters!.filter((x) => x.in === 'path').map((x) => x.name), ['id']);
  const again = await get('/openapi.json');
  t.same(await again.json(), doc, 'the same document on the next request');
  t.notOk(loaded('ajv'), 'still no ajv: the document\'s throwaway instance compiles nothing');
});

t.test('every route says what it answers: its 200, and errors as problem+json with a code of the table', async (t) => {
  type Doc = { components: { schemas: Record<string, { properties: { code: { enum: string[] } } }> }; paths: Record<string, { get: { responses: Record<string, { description: string; content?: Record<string, { schema: { $ref: string } }> }> } }> };
  const doc = (await (await get('/openapi.json')).json()) as Doc;
  const { ERROR_CODES } = await import('../../src/errors.js');
  t.same(doc.components.schemas.Problem!.properties.code.enum, ERROR_CODES, 'the code is one of the table');
  for (const [p, { get: op }] of Object.entries(doc.paths)) {
    t.not(op.responses['200']?.description, 'Default Response', `${p}: its 200 is described`);
    t.equal(op.responses.default?.content?.['application/problem+json']?.schema.$ref, '#/components/schemas/Problem', `${p}: errors`);
  }
  t.match(doc.paths['/v1/kernel']!.get.responses['200']!.description, /text table with \?format=text; with follow=true an NDJSON stream/);
  t.match(doc.paths['/metrics']!.get.responses['200']!.description, /Prometheus text/);
});
