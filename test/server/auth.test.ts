/**
 * --auth kubernetes against the fake API server: TokenReview then
 * SubjectAccessReview on nodes/proxy of this node, cached by token hash,
 * problem+json 401/403, identity in the audit line, token never logged.
 * Requests are injected, each token from an address of its own (light-my-request's
 * remoteAddress) unless a test is about one address: the review budget is per address.
 * Through the real HTTP server from several loopback addresses: auth-admission.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { AUTH_CACHE, authClocks } from '../../src/server/plugins/auth-decider.js';
import { OPEN_ROUTES } from '../../src/server/plugins/auth.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';

// A hang guard, not a time budget: the refused-cache test makes 4,146 real TokenReviews of the FAKE
// API server, 30 s on a quiet 2-core machine's share and near tap's 120 s under a full suite's load.
t.setTimeout(600_000);
const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-auth-'));
const fake = await new FakeKubeApiServer().start();
const kubeconfig = fake.writeKubeconfig(dir);
const ALICE = 'eyJhbGciOiJSUzI1NiJ9.alice-secret-token.sig';
const BOB = 'eyJhbGciOiJSUzI1NiJ9.bob-secret-token.sig';
const FORGED = 'eyJhbGciOiJSUzI1NiJ9.forged-token.sig';
const SCRAPER = 'eyJhbGciOiJSUzI1NiJ9.scraper-secret-token.sig';
fake.tokens.set(ALICE, { username: 'alice@example.com', groups: ['oncall', 'system:authenticated'], audiences: ['nodetruth', 'https://kubernetes.default.svc'] });
fake.tokens.set(BOB, { username: 'bob@example.com', groups: ['system:authenticated'], audiences: ['nodetruth'] });
fake.tokens.set(SCRAPER, { username: 'system:serviceaccount:monitoring:prometheus', groups: ['system:serviceaccounts'], audiences: ['nodetruth'] });
// the resource every route but /metrics is checked against: the default of --auth-resource
let RESOURCE = { resource: '', subresource: '' };
fake.authorize = (r) => {
  const a = r.resourceAttributes;
  // kube-prometheus grants Prometheus get nodes/metrics, not nodes/proxy
  if (r.user === 'system:serviceaccount:monitoring:prometheus') {
    const metrics = a.verb === 'get' && a.resource === 'nodes' && a.subresource === 'metrics' && a.name === 'node-a';
    return metrics ? { allowed: true, reason: 'RBAC: allowed by ClusterRole "prometheus-k8s"' } : { allowed: false };
  }
  const ok = r.groups.includes('oncall') && a.verb === 'get' && a.resource === RESOURCE.resource && a.subresource === RESOURCE.subresource && a.name === 'node-a';
  return ok ? { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "oncall-node-proxy" of ClusterRole "node-proxy" to Group "oncall"' } : { allowed: false };
};

const agent: TestApp = await testApp(['--auth', 'kubernetes', '--kubeconfig', kubeconfig, '--node-name', 'node-a', '--auth-audiences', 'nodetruth', '--host-root', dir, '--listen', '0.0.0.0:7070']);
t.teardown(async () => {
  await agent.close();
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});
{
  const [resource, subresource = ''] = agent.deps.config.authResource.split('/');
  RESOURCE = { resource: resource!, subresource };
}
const RES_TEXT = agent.deps.config.authResource;
/** A source address of each token's own, so the tests here never share one address's review budget. */
const addresses = new Map<string, string>();
const addressOf = (token: string) => {
  let a = addresses.get(token);
  if (!a) addresses.set(token, (a = `10.77.${addresses.size >> 8}.${addresses.size & 255}`));
  return a;
};
const get = (url: string, token?: string) =>
  agent.app.inject({ method: 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {}, remoteAddress: token ? addressOf(token) : '10.77.255.1' });
const reviews = () => ({ tr: fake.count('/apis/authentication.k8s.io'), sar: fake.count('/apis/authorization.k8s.io') });
const realNow = authClocks.now;
const shiftClock = (ms: number) => {
  authClocks.now = () => realNow() + ms;
};
t.afterEach(() => {
  authClocks.now = realNow;
});

t.test('only /healthz is open', async (t) => {
  t.same([...OPEN_ROUTES], ['/healthz']);
  const h = await get('/healthz');
  t.equal(h.statusCode, 200);
  for (const url of ['/readyz', '/openapi.json', '/v1/runtime']) {
    const r = await get(url);
    t.equal(r.statusCode, 401, `${url} needs a token`);
    t.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
    t.equal(r.headers['www-authenticate'], 'Bearer realm="nodetruth"');
    t.match(r.json(), { status: 401, title: 'Unauthorized', code: 'unauthorized', detail: /bearer token is required/ });
  }
  const basic = await agent.app.inject({ method: 'GET', url: '/readyz', headers: { authorization: 'Basic YWxpY2U6cHc=' } });
  t.equal(basic.statusCode, 401, 'basic auth is not a bearer token');
});

t.test('a path that is no route is 404 from the not-found handler, with or without a token, and no review is spent on it', async (t) => {
  const before = reviews();
  for (const [method, url] of [['GET', '/no-such-route'], ['GET', '/v1/nope?x=1'], ['POST', '/readyz'], ['DELETE', '/healthz'], ['GET', '/../etc/passwd']] as const) {
    for (const token of [undefined, `never-seen-${method}-${url}`, ALICE]) {
      const r = await agent.app.inject({ method, url, headers: token ? { authorization: `Bearer ${token}` } : {} });
      t.equal(r.statusCode, 404, `${method} ${url} ${token ? 'with' : 'without'} a token`);
      t.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
      t.match(r.json(), { status: 404, title: 'Not found', code: 'no_route', detail: /^no route / });
      t.notOk(r.headers['www-authenticate'], 'no challenge: there is nothing to authenticate for');
    }
  }
  t.same(reviews(), before, 'the API server was asked nothing');
});

t.test('allowed: TokenReview with the audiences, SubjectAccessReview for get --auth-resource of this node; identity audited', async (t) => {
  const before = reviews();
  const r = await get('/readyz', ALICE);
  t.equal(r.statusCode, 200);
  t.same(reviews(), { tr: before.tr + 1, sar: before.sar + 1 });
  const tr = fake.requests.find((q) => q.url.includes('tokenreviews'))!.body as { spec: { audiences: string[] } };
  t.same(tr.spec.audiences, ['nodetruth']);
  const sar = fake.requests.filter((q) => q.url.includes('subjectaccessreviews')).at(-1)!.body as { spec: Record<string, unknown> };
  t.same(sar.spec.resourceAttributes, { verb: 'get', resource: RESOURCE.resource, subresource: RESOURCE.subresource, name: 'node-a' });
  t.equal(sar.spec.user, 'alice@example.com');
  t.same(sar.spec.groups, ['oncall', 'system:authenticated']);
  const audit = agent.logs.filter((l) => l.audit).at(-1)!.audit as Record<string, unknown>;
  t.equal(audit.user, 'alice@example.com');
  t.equal(audit.status, 200);

  // fresh until refreshAheadMs before the TTL: no more reviews
  await get('/readyz', ALICE);
  await get('/v1/runtime', ALICE);
  t.same(reviews(), { tr: before.tr + 1, sar: before.sar + 1 }, 'served from the cache');
  const fresh = AUTH_CACHE.allowTtlMs - AUTH_CACHE.refreshAheadMs;
  shiftClock(fresh - 1000);
  await get('/readyz', ALICE);
  t.same(reviews(), { tr: before.tr + 1, sar: before.sar + 1 }, 'still fresh just before the refresh point');
  // from then on the allow serves while it is reviewed again in the background, once
  shiftClock(fresh + 1000);
  const rs = await Promise.all([get('/readyz', ALICE), get('/readyz', ALICE), get('/openapi.json', ALICE)]);
  t.same(rs.map((r) => r.statusCode), [200, 200, 200], 'answered from the cache while the re-review runs');
  for (let i = 0; i < 1000 && reviews().sar < before.sar + 2; i++) await new Promise((r) => setTimeout(r, 5));
  t.same(reviews(), { tr: before.tr + 2, sar: before.sar + 2 }, 'one re-review for all three');
  // the re-review made it fresh again: nothing more until the next refresh point
  shiftClock(fresh + 2000);
  await get('/readyz', ALICE);
  t.same(reviews(), { tr: before.tr + 2, sar: before.sar + 2 }, 'fresh again after the re-review');
});

t.test('authenticated but not authorized: 403 naming the user and the permission; denial cached 10 s', async (t) => {
  const before = reviews();
  const r = await get('/readyz', BOB);
  t.equal(r.statusCode, 403);
  t.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
  t.match(r.json(), { status: 403, title: 'Forbidden', code: 'forbidden', detail: `user "bob@example.com" cannot get ${RES_TEXT} of node "node-a"` });
  const audit = agent.logs.filter((l) => l.audit).at(-1)!.audit as Record<string, unknown>;
  t.equal(audit.user, 'bob@example.com', 'the denied user is audited');
  t.equal(audit.status, 403);
  await get('/readyz', BOB);
  t.same(reviews(), { tr: before.tr + 1, sar: before.sar + 1 }, 'denial cached');
  shiftClock(AUTH_CACHE.denyTtlMs + 1000);
  await get('/readyz', BOB);
  t.same(reviews(), { tr: before.tr + 2, sar: before.sar + 2 }, 'asked again after 10 s');
});

t.test('a token the API server does not authenticate: 401, cached 10 s, no SubjectAccessReview', async (t) => {
  const before = reviews();
  const r = await get('/readyz', FORGED);
  t.equal(r.statusCode, 401);
  t.match(r.json().detail, /token not authenticated: \[invalid bearer token/);
  t.equal(r.headers['www-authenticate'], 'Bearer realm="nodetruth", error="invalid_token"');
  await get('/readyz', FORGED);
  t.same(reviews(), { tr: before.tr + 1, sar: before.sar }, 'one TokenReview, no SAR');
});

t.test('a valid token for other audiences is refused', async (t) => {
  const other = 'token-for-another-audience';
  fake.tokens.set(other, { username: 'carol', groups: ['oncall'], audiences: ['https://kubernetes.default.svc'] });
  const r = await get('/readyz', other);
  t.equal(r.statusCode, 401);
});

t.test("API server failing: 502/503 from the code table, not cached, nothing leaks (not even the API server's address)", async (t) => {
  const dave = 'dave-token-never-logged';
  fake.tokens.set(dave, { username: 'dave', groups: ['oncall'], audiences: ['nodetruth'] });
  const hostPort = new URL(fake.url).host;
  const answers: { status: number; body: string }[] = [];
  const failing = async (status: number, code: string, step: string) => {
    const r = await get('/readyz', dave);
    answers.push({ status: r.statusCode, body: r.body });
    t.equal(r.statusCode, status, `${code} → ${status}`);
    t.match(r.json(), { status, code, detail: new RegExp(`^--auth kubernetes could not review the token \\(${step}\\): .*; the agent's log has the details$`) });
    t.notOk(r.body.includes(hostPort), `the ${status} does not name the API server (${hostPort})`);
  };
  fake.mode.tokenreviews = 'error500';
  await failing(502, 'api_server_error', 'TokenReview');
  fake.mode.tokenreviews = 'forbidden';
  await failing(503, 'no_cluster_access', 'TokenReview');
  fake.mode.tokenreviews = 'ok';
  fake.mode.subjectaccessreviews = 'error500';
  await failing(502, 'api_server_error', 'SubjectAccessReview');
  const logged = agent.logs.filter((l) => String(l.msg).startsWith('--auth kubernetes: ') && String(l.reason).includes(hostPort));
  t.ok(logged.length >= 1, "the operator's log names the API server and the cause");
  t.ok(logged.some((l) => /TokenReview: 500 .*etcdserver: request timed out/.test(String(l.reason))), 'with the cause');
  fake.mode.subjectaccessreviews = 'ok';
  const ok = await get('/readyz', dave);
  t.equal(ok.statusCode, 200, 'failures were not cached');
});

t.test('concurrent requests with one token share one review', async (t) => {
  const erin = 'erin-token';
  fake.tokens.set(erin, { username: 'erin', groups: ['oncall'], audiences: ['nodetruth'] });
  const before = reviews();
  const rs = await Promise.all(Array.from({ length: 10 }, () => get('/readyz', erin)));
  t.same(rs.map((r) => r.statusCode), Array(10).fill(200));
  t.same(reviews(), { tr: before.tr + 1, sar: before.sar + 1 });
});

t.test('no token ever reaches a log line', async (t) => {
  const all = JSON.stringify(agent.logs);
  t.ok(agent.logs.length > 20, `${agent.logs.length} log lines checked`);
  for (const tok of [ALICE, BOB, FORGED, 'dave-token-never-logged', 'erin-token', 'token-for-another-audience']) t.notOk(all.includes(tok), 'token absent from logs');
  t.notOk(all.includes('secret-token'), 'no token fragment');
});

t.test('auth on without cluster access: 503 with the reason', async (t) => {
  const a = await testApp(['--auth', 'kubernetes', '--kubeconfig', path.join(dir, 'missing'), '--node-name', 'node-a', '--host-root', dir]);
  t.teardown(() => a.close());
  const warn = a.logs.find((l) => /no API server access/.test(String(l.msg)));
  t.ok(warn, 'warned at start');
  const r = await a.app.inject({ method: 'GET', url: '/readyz', headers: { authorization: `Bearer ${ALICE}` } });
  t.equal(r.statusCode, 503);
  t.match(r.json(), { status: 503, title: 'Source unavailable', code: 'no_cluster_credentials', detail: "--auth kubernetes cannot review tokens: nodetruth has no access to the Kubernetes API server; the agent's log says why" });
  t.notOk(r.body.includes(dir), 'where the agent looked is for its log, not for any caller');
  t.ok(a.logs.some((l) => /kubeconfig .*missing does not exist/.test(String(l.reason))), 'the log says why');
  t.equal((await a.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
});

t.test('/metrics asks for nodes/metrics, as kubelet does: a Prometheus token scrapes it and nothing else', async (t) => {
  const m = await get('/metrics', SCRAPER);
  t.equal(m.statusCode, 200);
  t.match(m.body, /^# HELP /m);
  const sar = fake.requests.filter((r) => r.url.startsWith('/apis/authorization.k8s.io')).at(-1);
  t.same((sar?.body as { spec: { resourceAttributes: unknown } } | undefined)?.spec.resourceAttributes, { verb: 'get', resource: 'nodes', subresource: 'metrics', name: 'node-a' });
  const other = await get('/v1/runtime', SCRAPER);
  t.equal(other.statusCode, 403);
  t.match(other.json().detail, `cannot get ${RES_TEXT} of node "node-a"`);
  t.equal((await get('/metrics', ALICE)).statusCode, 403, `${RES_TEXT} alone does not grant nodes/metrics`);
});

t.test('a flood of unknown tokens is rate-limited per address and in total (429 + Retry-After) and never reaches past the buckets', async (t) => {
  // The buckets refill with time, so a real clock lets more of the flood through the slower the
  // machine runs it: the test drives the buckets' clock (authClocks) and counts exactly.
  // A whole number: (x + 1000) - x is not 1000 in floating point for every fractional x (one CI run
  // saw 9.99 tokens a second later, so 9 reviews instead of 10).
  let bucketMs = 1_000_000;
  authClocks.bucketNow = () => bucketMs;
  t.teardown(() => {
    authClocks.bucketNow = () => performance.now();
  });
  // a fresh agent: its buckets are full
  const a = await testApp(['--auth', 'kubernetes', '--kubeconfig', kubeconfig, '--node-name', 'node-a', '--auth-audiences', 'nodetruth', '--host-root', dir]);
  t.teardown(() => a.close());
  const inject = (token: string, remoteAddress: string) => a.app.inject({ method: 'GET', url: '/readyz', headers: { authorization: `Bearer ${token}` }, remoteAddress });
  const ok = await inject(ALICE, '10.1.0.1');
  t.equal(ok.statusCode, 200, 'the first review (ALICE) takes one of the global burst');
  const flood = async (n: number, tag: string, from: (i: number) => string) => {
    const before = reviews();
    const statuses: number[] = [];
    const retryAfter = new Set<string>();
    const details = new Set<string>();
    for (let i = 0; i < n; i++) {
      const r = await inject(`random-${tag}-${i}-${Math.random()}`, from(i));
      statuses.push(r.statusCode);
      if (r.statusCode === 429) {
        retryAfter.add(String(r.headers['retry-after']));
        details.add(r.json().detail.replace(/; retry in .*/, ''));
        t.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
      }
    }
    const count = (s: number) => statuses.filter((x) => x === s).length;
    return { reviewed: count(401), refused: count(429), other: statuses.filter((s) => s !== 401 && s !== 429), tr: reviews().tr - before.tr, retryAfter: [...retryAfter], details: [...details] };
  };
  // one address: its own burst, then 429, whatever the global bucket still holds
  const one = await flood(AUTH_CACHE.reviewBurstPerAddress + 30, 'one', () => '10.2.0.1');
  t.same(one.other, [], 'every unknown token is refused: 401 when reviewed, 429 past the bucket');
  t.equal(one.reviewed, AUTH_CACHE.reviewBurstPerAddress, "the address's burst was reviewed");
  t.equal(one.refused, 30, 'the rest of its flood is refused without asking');
  t.equal(one.tr, AUTH_CACHE.reviewBurstPerAddress, 'the API server saw only the reviewed ones');
  t.same(one.retryAfter, [String(Math.ceil(1 / AUTH_CACHE.reviewsPerSecondPerAddress))], "Retry-After: when the address's next token is there, in whole seconds");
  t.same(one.details, [`too many new bearer tokens to review from this address (at most ${AUTH_CACHE.reviewsPerSecondPerAddress}/s, burst ${AUTH_CACHE.reviewBurstPerAddress})`]);
  // many addresses: each within its own budget, together capped by the global bucket
  const left = AUTH_CACHE.reviewBurst - 1 - AUTH_CACHE.reviewBurstPerAddress;
  const many = await flood(left + 30, 'many', (i) => `10.3.${i >> 8}.${i & 255}`);
  t.same(many.other, []);
  t.equal(many.reviewed, left, 'the rest of the global burst was reviewed');
  t.equal(many.refused, 30);
  t.equal(many.tr, left);
  t.same(many.retryAfter, [String(Math.ceil(1 / AUTH_CACHE.reviewsPerSecond))]);
  t.same(many.details, [`too many new bearer tokens to review (at most ${AUTH_CACHE.reviewsPerSecond}/s, burst ${AUTH_CACHE.reviewBurst}, all callers together)`]);
  // a second later the global bucket holds reviewsPerSecond tokens again, no more
  bucketMs += 1000;
  const second = await flood(AUTH_CACHE.reviewsPerSecond + 5, 'b', (i) => `10.4.0.${i}`);
  t.same(second.other, []);
  t.equal(second.reviewed, AUTH_CACHE.reviewsPerSecond, 'a second refills reviewsPerSecond reviews');
  t.equal(second.refused, 5);
  t.equal(second.tr, AUTH_CACHE.reviewsPerSecond);
  const again = await inject(ALICE, '10.2.0.1');
  t.equal(again.statusCode, 200, "a cached allowed token still works during the flood, even from the flooding address");
  // IPv6 callers share their /64's budget (review-admission.test.ts: the keys)
  bucketMs += 3600_000;
  const v6 = await flood(AUTH_CACHE.reviewBurstPerAddress + 2, 'v6', (i) => `2001:db8:1:2::${(i + 1).toString(16)}`);
  t.equal(v6.reviewed, AUTH_CACHE.reviewBurstPerAddress, 'one /64, one budget');
});

t.test('refused tokens fill their own cache; they never evict an allowed entry', async (t) => {
  const { AuthDecider } = await import('../../src/server/plugins/auth-decider.js');
  let tick = 0;
  // The caches' clock stands still while the flood runs (4,000 reviews can outlast the allowed
  // entry's 60 s on a loaded machine): only an eviction could take the entry. The bucket's
  // clock jumps a second per look, so the bucket never runs dry here.
  let wall = Date.now();
  const decider = new AuthDecider(agent.deps, () => wall, () => (tick += 1000));
  t.equal((await decider.decide(ALICE)).ok, true);
  const floods = AUTH_CACHE.maxDenied + 50;
  for (let i = 0; i < floods; i += 16) {
    await Promise.all(Array.from({ length: Math.min(16, floods - i) }, (_, j) => decider.decide(`flood-${i + j}`)));
  }
  t.same(decider.sizes, { allowed: 1, denied: AUTH_CACHE.maxDenied, addresses: 1 }, 'the refused cache is bounded, the allowed entry kept');
  const before = reviews();
  t.equal((await decider.decide(ALICE)).ok, true);
  t.same(reviews(), before, 'the allowed entry is still served from the cache');
  // and the look above would have seen a review: past its TTL the entry is reviewed again
  wall += AUTH_CACHE.allowTtlMs + 1;
  t.equal((await decider.decide(ALICE)).ok, true, 'served while it is reviewed again');
  for (let i = 0; i < 1000 && reviews().sar === before.sar; i++) await new Promise((r) => setTimeout(r, 5));
  t.equal(reviews().tr, before.tr + 1, 'past the TTL the token is reviewed again');
});
