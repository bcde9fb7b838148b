/**
 * Sources throw SourceError codes; one table gives each its HTTP answer. Through
 * a real fastify server with the problems plugin: every code answers with its
 * table row, the bodies keep the fields clients read (param on 400, candidates
 * on 409, Retry-After on 429), and the statuses and titles stay the ones these
 * conditions have always answered with.
 */
import Fastify from 'fastify';
import t from 'tap';
import { installProblemHandlers } from '../../src/server/plugins/problems.js';
import { PROBLEM_TYPES, problemCodesDescription } from '../../src/server/problem-types.js';
import { SOURCE_ERROR_CODES, SourceError, type SourceErrorCode } from '../../src/readers/errors.js';

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
    t.equal(PROBLEM_TYPES[code].status, status);
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
  for (const code of SOURCE_ERROR_CODES) t.match(text, `\`${code}\` (${PROBLEM_TYPES[code].status} `);
});
