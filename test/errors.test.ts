/**
 * One table gives every error answer: sources throw SourceError codes, the server
 * its own Problems, each made from a code. Through a real fastify server with the
 * problems plugin: every code answers with its table row and carries `code`, the
 * bodies keep the fields clients read (param on 400, candidates on 409, Retry-After
 * on 429), and the statuses and titles stay the ones these conditions have always
 * answered with.
 */
import Fastify from 'fastify';
import t from 'tap';
import { installProblemHandlers } from '../src/server/plugins/problems.js';
import { ERROR_CODES, ERROR_TYPES, Problem, problemCodesDescription, type ErrorCode } from '../src/errors.js';
import { SOURCE_ERROR_CODES, SourceError, type SourceErrorCode } from '../src/readers/errors.js';

/** the server's own codes: the rest of the table */
type ServerErrorCode = Exclude<ErrorCode, SourceErrorCode>;

/** What each code answered before codes existed (status and title of the Problem helper it replaced). */
const BEFORE: Record<SourceErrorCode, [number, string]> = {
  bad_parameter: [400, 'Invalid input'],
  path_outside_root: [400, 'Invalid input'],
  path_not_regular: [400, 'Invalid input'],
  path_link_loop: [400, 'Invalid input'],
  not_found: [404, 'Not found'],
  ambiguous_id: [409, 'Ambiguous id prefix'],
  busy: [429, 'Too many requests'],
  cgroup_mode_unsupported: [501, 'Not implemented'],
  runtime_unimplemented: [501, 'Not implemented'],
  source_unsupported: [501, 'Not implemented'],
  runtime_error: [502, 'Runtime error'],
  api_server_error: [502, 'Kubernetes API error'],
  runtime_unconfigured: [503, 'Source unavailable'],
  runtime_unreachable: [503, 'Source unavailable'],
  source_unavailable: [503, 'Source unavailable'],
  api_server_unreachable: [503, 'Source unavailable'],
  no_cluster_access: [503, 'Source unavailable'],
  source_unreadable: [503, 'Source unreadable'],
  runtime_timeout: [504, 'Source timed out'],
  api_server_timeout: [504, 'Source timed out'],
  source_timeout: [504, 'Source timed out'],
};

/** What the server's own refusals answered before they had codes (the Problems built by hand). */
const SERVER_BEFORE: Record<ServerErrorCode, [number, string]> = {
  malformed_request: [400, 'Bad request'],
  unauthorized: [401, 'Unauthorized'],
  session_required: [401, 'Unauthorized'],
  forbidden: [403, 'Forbidden'],
  no_route: [404, 'Not found'],
  request_header_timeout: [408, 'Request timeout'],
  bundle_not_live: [409, 'Bundle is not the live node'],
  content_too_large: [413, 'Content too large'],
  uri_too_long: [414, 'URI too long'],
  unsupported_media_type: [415, 'Unsupported media type'],
  misdirected: [421, 'Misdirected request'],
  too_many_follows: [429, 'Too many requests'],
  capture_running: [429, 'Too many requests'],
  too_many_reviews: [429, 'Too many requests'],
  client_unread_limit: [429, 'Too many requests'],
  headers_too_large: [431, 'Request header fields too large'],
  client_closed: [499, 'Client closed request'],
  internal_error: [500, 'Internal error'],
  bundle_answer_refused: [502, 'Bundle answer refused'],
  overloaded: [503, 'Overloaded'],
  shutting_down: [503, 'Shutting down'],
  no_cluster_credentials: [503, 'Source unavailable'],
  needs_runtime: [503, 'Source unavailable'],
  request_timeout: [504, 'Request timed out'],
};
const SERVER_ERROR_CODES = Object.keys(SERVER_BEFORE) as ServerErrorCode[];

const app = Fastify();
installProblemHandlers(app);
app.get<{ Params: { code: SourceErrorCode } }>('/throw/:code', async (req) => {
  const code = req.params.code;
  throw new SourceError(code, `${code}: what the source said`, {
    ...(code === 'bad_parameter' ? { param: 'tailLines' } : {}),
    ...(code === 'ambiguous_id' ? { candidates: ['abc1', 'abc2'] } : {}),
    ...(code === 'busy' ? { retryAfterSeconds: 2.5 } : {}),
    ...(code === 'path_outside_root' ? { reason: 'EXDEV' } : {}),
  });
});
app.get<{ Params: { code: ServerErrorCode } }>('/problem/:code', async (req) => {
  throw new Problem(req.params.code, `${req.params.code}: what the server said`, req.params.code === 'bundle_not_live' ? { node: 'node-a' } : undefined);
});
app.get('/bug', async () => {
  throw new TypeError('secret internals');
});
await app.listen({ port: 0, host: '127.0.0.1' });
t.teardown(() => app.close());
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

t.test('every code answers with its row of the table, over real HTTP', async (t) => {
  for (const code of SOURCE_ERROR_CODES) {
    const res = await fetch(`${base}/throw/${code}`);
    const body = (await res.json()) as Record<string, unknown>;
    const [status, title] = BEFORE[code];
    t.equal(res.status, status, `${code} → ${status}`);
    t.match(res.headers.get('content-type'), /^application\/problem\+json/);
    t.match(body, { type: `https://nodetruth.dev/problems/${title.toLowerCase().replace(/ /g, '-')}`, title, status, detail: `${code}: what the source said`, instance: `/throw/${code}`, code });
    t.equal(ERROR_TYPES[code].status, status);
  }
});

t.test("every server code answers with its row and its code, over real HTTP", async (t) => {
  for (const code of SERVER_ERROR_CODES) {
    const res = await fetch(`${base}/problem/${code}`);
    const body = (await res.json()) as Record<string, unknown>;
    const [status, title] = SERVER_BEFORE[code];
    t.equal(res.status, status, `${code} → ${status}`);
    t.match(res.headers.get('content-type'), /^application\/problem\+json/);
    t.match(body, { type: `https://nodetruth.dev/problems/${title.toLowerCase().replace(/ /g, '-')}`, title, status, detail: `${code}: what the server said`, instance: `/problem/${code}`, code });
    t.equal(res.headers.get('retry-after') !== null, status === 429 || code === 'overloaded', `${code}: Retry-After only where a slot frees`);
  }
  t.match(await (await fetch(`${base}/problem/bundle_not_live`)).json(), { code: 'bundle_not_live', node: 'node-a' }, 'extra fields');
});

t.test('the handler\'s own answers carry a code: no route, a bug', async (t) => {
  const none = await fetch(`${base}/nothing/here`);
  t.equal(none.status, 404);
  t.match(await none.json(), { code: 'no_route', title: 'Not found', detail: /^no route GET \/nothing\/here/ });
  const bug = await fetch(`${base}/bug`);
  t.equal(bug.status, 500);
  const b = (await bug.json()) as Record<string, unknown>;
  t.match(b, { code: 'internal_error', title: 'Internal error' });
  t.notMatch(JSON.stringify(b), /secret internals/);
});

t.test('one row per code, every type the slug of its title', async (t) => {
  t.same(new Set(ERROR_CODES), new Set([...SOURCE_ERROR_CODES, ...SERVER_ERROR_CODES]));
  for (const c of ERROR_CODES) {
    t.ok(ERROR_TYPES[c].means.length > 10, `${c} says what it means`);
    t.equal(ERROR_TYPES[c].type, `https://nodetruth.dev/problems/${ERROR_TYPES[c].title.toLowerCase().replace(/ /g, '-')}`);
  }
});

t.test('the fields clients act on: param, candidates, Retry-After, reason', async (t) => {
  const bad = (await (await fetch(`${base}/throw/bad_parameter`)).json()) as Record<string, unknown>;
  t.equal(bad.param, 'tailLines');
  const amb = (await (await fetch(`${base}/throw/ambiguous_id`)).json()) as Record<string, unknown>;
  t.same(amb.candidates, ['abc1', 'abc2']);
  const busy = await fetch(`${base}/throw/busy`);
  t.equal(busy.headers.get('retry-after'), '3', 'whole seconds, rounded up');
  const out = (await (await fetch(`${base}/throw/path_outside_root`)).json()) as Record<string, unknown>;
  t.equal(out.reason, 'EXDEV');
  // fields a code does not carry are absent, not null
  t.notOk('param' in amb || 'candidates' in bad || 'reason' in bad);
  t.equal((await fetch(`${base}/throw/not_found`)).headers.get('retry-after'), null);
});

t.test('the OpenAPI description lists every code', async (t) => {
  const text = problemCodesDescription();
  for (const code of ERROR_CODES) t.match(text, `\`${code}\` (${ERROR_TYPES[code].status} `);
});
