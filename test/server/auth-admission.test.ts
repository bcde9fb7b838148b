/**
 * --auth kubernetes under an anonymous flood, through the real HTTP server and the FAKE
 * API server, with callers on different loopback source addresses (the client socket
 * bound to 127.0.0.x):
 * - random bearer tokens to a path that is no route: 404, and no TokenReview reaches the API server;
 * - random bearer tokens to a real route from one address: that address's budget runs out,
 *   while new valid tokens from another address keep getting 200;
 * - a cached allow past its TTL (Prometheus' token) keeps answering 200 while it is reviewed
 *   again (the fake holds the review), even with its own address's budget spent, and is
 *   dropped when the re-review refuses it;
 * - with the API server failing, the stale allow serves for a bounded time, then fails closed;
 * - a failure to reach the API server never shows its address to the caller.
 * The buckets' and the caches' clocks are driven by the test (authClocks), so every count is exact.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { AUTH_CACHE, authClocks } from '../../src/server/plugins/auth-decider.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { FakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';

const FLOODER = '127.0.0.1';
const OPERATOR = '127.0.0.2';
const PROMETHEUS = '127.0.0.3';
const OTHER = '127.0.0.4';

/** Whether this host routes the whole of 127/8 to loopback (Linux does; macOS has only 127.0.0.1). */
async function canBind(addr: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection({ host: '127.0.0.1', port: 9, localAddress: addr });
    c.on('error', (err: NodeJS.ErrnoException) => resolve(err.code !== 'EADDRNOTAVAIL' && err.code !== 'EINVAL'));
    c.on('connect', () => (c.destroy(), resolve(true)));
  });
}
const skip = (await canBind(OPERATOR)) ? false : `cannot bind a client socket to ${OPERATOR}: this host does not route 127.0.0.0/8 to loopback, and these tests need callers on distinct addresses`;

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-authadm-'));
const fake = await new FakeKubeApiServer().start();
const kubeconfig = fake.writeKubeconfig(dir);
const VALID = Array.from({ length: 8 }, (_, i) => `eyJhbGciOiJSUzI1NiJ9.oncall-${i}-token.sig`);
for (const [i, tok] of VALID.entries()) fake.tokens.set(tok, { username: `oncall-${i}@example.com`, groups: ['oncall'], audiences: ['nodetruth'] });
const SCRAPER = 'eyJhbGciOiJSUzI1NiJ9.prometheus-token.sig';
fake.tokens.set(SCRAPER, { username: 'system:serviceaccount:monitoring:prometheus', groups: ['system:serviceaccounts'], audiences: ['nodetruth'] });
const DAVE = 'eyJhbGciOiJSUzI1NiJ9.dave-token.sig';
fake.tokens.set(DAVE, { username: 'dave@example.com', groups: ['oncall'], audiences: ['nodetruth'] });
fake.authorize = (r) => {
  const a = r.resourceAttributes;
  const want = (sub: string) => a.verb === 'get' && a.resource === 'nodes' && a.subresource === sub && a.name === 'node-a';
  if (r.user === 'system:serviceaccount:monitoring:prometheus') return { allowed: want('metrics') };
  return { allowed: r.groups.includes('oncall') && want('nodetruth') };
};

// The buckets' clock stands still unless a test moves it (a real one refills them as the test
// runs, by how slowly the machine runs it); the caches' clock likewise.
let bucketMs = 1_000_000;
let wall = Date.now();
const clocks = { ...authClocks };
authClocks.bucketNow = () => bucketMs;
authClocks.now = () => wall;
/** Every bucket full again: more than a burst's worth of seconds later. */
const refillBuckets = () => (bucketMs += 3_600_000);

const agent: TestApp = await testApp(['--auth', 'kubernetes', '--kubeconfig', kubeconfig, '--node-name', 'node-a', '--auth-audiences', 'nodetruth', '--host-root', dir]);
await agent.app.listen({ port: 0, host: '127.0.0.1' });
const port = (agent.app.server.address() as AddressInfo).port;
t.teardown(async () => {
  Object.assign(authClocks, clocks);
  await agent.close();
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: string;
  retryAfter: string | undefined;
}

/** GET over a connection of its own from the source address `from`. */
function get(urlPath: string, token: string, from: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, localAddress: from, agent: false, timeout: 30_000, headers: { authorization: `Bearer ${token}` } });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, retryAfter: res.headers['retry-after'] }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${urlPath}: no answer`)));
    req.on('error', reject);
    req.end();
  });
}

const randomToken = (tag: string) => `eyJhbGciOiJSUzI1NiJ9.${tag}-${Math.random().toString(36).slice(2)}.sig`;
const tokenReviews = () => fake.count('/apis/authentication.k8s.io/v1/tokenreviews');
const countOf = (as: Answer[], status: number) => as.filter((a) => a.status === status).length;

/** Ask until `done` holds for an answer, a bounded number of times: the agent's background re-review has to land first. */
async function until(ask: () => Promise<Answer>, done: (a: Answer) => boolean): Promise<Answer> {
  let a = await ask();
  for (let i = 0; i < 400 && !done(a); i++) {
    await new Promise((r) => setTimeout(r, 10));
    a = await ask();
  }
  return a;
}

/** Wait, a bounded number of times, until the fake has seen `n` TokenReviews. */
async function reviewsReach(n: number): Promise<number> {
  for (let i = 0; i < 400 && tokenReviews() < n; i++) await new Promise((r) => setTimeout(r, 10));
  return tokenReviews();
}

t.test('random tokens to a path that is no route: 404, no TokenReview', { skip }, async (t) => {
  const before = tokenReviews();
  const answers: Answer[] = [];
  for (let b = 0; b < 6; b++) {
    answers.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => get(`/v1/no-such-thing/${b * 10 + i}`, randomToken('unknown-path'), FLOODER)))));
  }
  t.equal(countOf(answers, 404), 60, 'every one answered 404');
  t.match(JSON.parse(answers[0]!.body), { status: 404, title: 'Not found', detail: /^no route GET \/v1\/no-such-thing\// });
  t.equal(tokenReviews(), before, 'the API server was asked nothing');
});

t.test('a flood of random tokens from one address to a real route: new valid tokens from another address keep getting 200', { skip }, async (t) => {
  refillBuckets();
  const before = tokenReviews();
  const flood: Answer[] = [];
  const valid: Answer[] = [];
  for (let b = 0; b < VALID.length; b++) {
    const [ok, ...rest] = await Promise.all([
      get('/readyz', VALID[b]!, OPERATOR),
      ...Array.from({ length: 10 }, () => get('/readyz', randomToken('flood'), FLOODER)),
      get(`/nope/${b}`, randomToken('flood'), FLOODER),
    ]);
    valid.push(ok!);
    flood.push(...rest);
  }
  t.same(
    valid.map((a) => a.status),
    Array(VALID.length).fill(200),
    'every valid token from the other address was reviewed and allowed',
  );
  t.equal(countOf(flood, 404), VALID.length, 'the unknown path: 404');
  t.equal(countOf(flood, 401), AUTH_CACHE.reviewBurstPerAddress, "the flooding address's burst was reviewed (and refused)");
  t.equal(countOf(flood, 429), VALID.length * 10 - AUTH_CACHE.reviewBurstPerAddress, 'the rest of its flood was refused without asking');
  const limited = flood.find((a) => a.status === 429)!;
  t.equal(limited.retryAfter, String(Math.ceil(1 / AUTH_CACHE.reviewsPerSecondPerAddress)));
  t.match(JSON.parse(limited.body), { status: 429, title: 'Too many requests', code: 'too_many_reviews', detail: /from this address/ });
  t.equal(tokenReviews() - before, VALID.length + AUTH_CACHE.reviewBurstPerAddress, 'the API server saw only the admitted reviews');
});

t.test("a cached allow past its TTL serves while it is reviewed again (not from the flooded budget), and is dropped when the re-review refuses", { skip }, async (t) => {
  refillBuckets();
  const first = await get('/metrics', SCRAPER, PROMETHEUS);
  t.equal(first.status, 200, 'Prometheus scrapes');
  // a flood from Prometheus' own address spends that address's budget
  const flood = await Promise.all(Array.from({ length: 2 * AUTH_CACHE.reviewBurstPerAddress }, () => get('/metrics', randomToken('flood'), PROMETHEUS)));
  t.equal(countOf(flood, 429), AUTH_CACHE.reviewBurstPerAddress + 1, "the address's budget is spent");
  const before = tokenReviews();

  fake.mode.tokenreviews = 'hold';
  t.teardown(() => {
    fake.mode.tokenreviews = 'ok';
    fake.release();
  });
  wall += AUTH_CACHE.allowTtlMs + 1000;
  const stale = await get('/metrics', SCRAPER, PROMETHEUS);
  t.equal(stale.status, 200, 'past its TTL the allow still serves');
  await fake.waitForHeld(1);
  t.equal(tokenReviews(), before + 1, 'and it is being reviewed again');
  const during = await Promise.all(Array.from({ length: 5 }, () => get('/metrics', SCRAPER, PROMETHEUS)));
  t.same(
    during.map((a) => a.status),
    Array(5).fill(200),
    'answers go on while the re-review is held',
  );
  t.equal(fake.heldCount, 1, 'one re-review in flight, not one per request');
  t.equal(tokenReviews(), before + 1);

  // the token was revoked meanwhile: the re-review refuses it
  fake.tokens.delete(SCRAPER);
  fake.mode.tokenreviews = 'ok';
  t.equal(fake.release(), 1);
  const after = await until(
    () => get('/metrics', SCRAPER, PROMETHEUS),
    (a) => a.status !== 200,
  );
  t.equal(after.status, 401, 'the allow was dropped: the refusal answers');
  t.match(JSON.parse(after.body).detail, /^token not authenticated/);
  t.equal(tokenReviews(), before + 1, 'from the refused cache: no review more');
});

t.test('the API server failing: the stale allow serves a bounded time, then fails closed', { skip }, async (t) => {
  refillBuckets();
  t.equal((await get('/readyz', DAVE, OTHER)).status, 200);
  const before = tokenReviews();
  fake.mode.tokenreviews = 'error500';
  t.teardown(() => {
    fake.mode.tokenreviews = 'ok';
  });
  wall += AUTH_CACHE.allowTtlMs + 1000;
  t.equal((await get('/readyz', DAVE, OTHER)).status, 200, 'past its TTL, served while the re-review runs');
  t.equal(await reviewsReach(before + 1), before + 1, 'the re-review was tried and failed');
  t.equal((await get('/readyz', DAVE, OTHER)).status, 200, 'the API server failing, the allow serves on');
  t.equal(tokenReviews(), before + 1, 'a failed re-review is not tried again at once');
  wall += AUTH_CACHE.refreshRetryMs;
  t.equal((await get('/readyz', DAVE, OTHER)).status, 200);
  t.equal(await reviewsReach(before + 2), before + 2, 'tried again after refreshRetryMs');
  wall += AUTH_CACHE.allowStaleMs;
  const closed = await get('/readyz', DAVE, OTHER);
  t.equal(closed.status, 502, 'past the stale bound: reviewed as a new token, and the failure answers');
  t.notOk(closed.body.includes(new URL(fake.url).host), "the 502 does not name the API server");
  fake.mode.tokenreviews = 'ok';
  t.equal((await get('/readyz', DAVE, OTHER)).status, 200, 'the API server back: allowed again');
});

t.test("502/503/504 never show the API server's address; the agent's log does", { skip }, async (t) => {
  refillBuckets();
  const host = new URL(fake.url).host;
  const cases: [keyof typeof fake.mode, 'error500' | 'forbidden' | 'hang', number, string][] = [
    ['tokenreviews', 'error500', 502, 'api_server_error'],
    ['tokenreviews', 'forbidden', 503, 'no_cluster_access'],
    ['subjectaccessreviews', 'error500', 502, 'api_server_error'],
    ['tokenreviews', 'hang', 504, 'api_server_timeout'],
  ];
  for (const [endpoint, mode, status, code] of cases) {
    const token = `eyJhbGciOiJSUzI1NiJ9.fresh-${mode}-${endpoint}.sig`;
    fake.tokens.set(token, { username: 'erin@example.com', groups: ['oncall'], audiences: ['nodetruth'] });
    fake.mode[endpoint] = mode;
    const r = await get('/readyz', token, OTHER);
    fake.mode[endpoint] = 'ok';
    t.equal(r.status, status, `${endpoint} ${mode} → ${status}`);
    t.match(JSON.parse(r.body), { status, code });
    t.notOk(r.body.includes(host), `the ${status} body does not hold ${host}`);
    t.notOk(r.body.includes('127.0.0.1'), 'nor its address');
  }
  t.ok(
    agent.logs.some((l) => String(l.reason ?? '').includes(host)),
    'the log names the API server for the operator',
  );

  // nothing listening where the kubeconfig points: 503 api_server_unreachable
  const gone = await new FakeKubeApiServer().start();
  const goneDir = mkdtempSync(path.join(tmpdir(), 'nodetruth-authadm-gone-'));
  const goneKubeconfig = gone.writeKubeconfig(goneDir);
  const goneHost = new URL(gone.url).host;
  await gone.stop();
  const a = await testApp(['--auth', 'kubernetes', '--kubeconfig', goneKubeconfig, '--node-name', 'node-a', '--host-root', dir]);
  t.teardown(async () => {
    await a.close();
    rmSync(goneDir, { recursive: true, force: true });
  });
  const r = await a.app.inject({ method: 'GET', url: '/readyz', headers: { authorization: `Bearer ${VALID[1]}` } });
  t.equal(r.statusCode, 503);
  t.match(r.json(), { status: 503, code: 'api_server_unreachable', detail: /^--auth kubernetes could not review the token \(TokenReview\): the Kubernetes API server cannot be reached/ });
  t.notOk(r.body.includes(goneHost), `the 503 does not hold ${goneHost}`);
  t.ok(
    a.logs.some((l) => String(l.reason ?? '').includes(goneHost)),
    'the log does',
  );
});
