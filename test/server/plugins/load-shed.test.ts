/**
 * Load shedding: past `running` heavy requests and `queued` waiting ones, a heavy
 * request answers 503 problem+json with Retry-After at once; a request that `joins` an
 * answer made already takes no slot, at once or while it waits; waiting requests are
 * admitted in order as slots free;
 * a waiter whose client left is dropped from the queue; light routes never wait.
 * Through a real HTTP server on loopback; the heavy routes' work is held open by the test
 * (a promise it resolves), so nothing here depends on timing.
 */
import { request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import t, { type Test } from 'tap';
import { installProblemHandlers } from '../../../src/server/plugins/problems.js';
import { installLoadShed, LOAD_SHED_DEFAULTS } from '../../../src/server/plugins/load-shed.js';
import { Reading } from '../../../src/reading.js';
import { makeFakeScaleHost } from '../../fixtures/fake-node.js';
import { testApp } from '../../helpers/app.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

function get(base: string, path: string, signal?: AbortSignal): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { agent: false, signal }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A heavy route's work: each call waits until the test lets it finish. */
function gate() {
  const started: string[] = [];
  const open: (() => void)[] = [];
  return {
    started,
    work: (what: string) =>
      new Promise<void>((resolve) => {
        started.push(what);
        open.push(resolve);
      }),
    finishOne: () => open.shift()?.(),
    finishAll: () => {
      while (open.length) open.shift()!();
    },
  };
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!cond()) throw new Error(`never: ${what}`);
}

async function server(t: Test, opts: { running: number; queued: number; maxWaitMs?: number }) {
  const g = gate();
  const app = Fastify();
  installProblemHandlers(app as never);
  // the test's stand-in for a reading's made answers: a request for one of these joins
  const made = new Set<string>();
  installLoadShed(app, { ...opts, routes: new Set(['/heavy', '/other', '/own']), joins: (req) => made.has(req.url) });
  let answered = 0;
  app.get('/heavy', async (req) => {
    await g.work(`heavy ${req.url}`);
    return { ok: ++answered };
  });
  app.get('/other', async () => {
    await g.work('other');
    return { ok: true };
  });
  app.get('/own', async (req) => {
    await g.work(`own ${req.url}`);
    return { ok: true };
  });
  app.get('/light', async () => ({ light: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(async () => {
    g.finishAll();
    await app.close();
  });
  return { g, made, app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

t.test('beyond running + queued: 503 problem+json with Retry-After, at once; the rest are answered in order', async (t) => {
  const { g, base } = await server(t, { running: 1, queued: 1 });
  const first = get(base, '/heavy?n=1');
  await until(() => g.started.length === 1, 'the first runs');
  const second = get(base, '/heavy?n=2'); // waits for the slot
  await new Promise((r) => setTimeout(r, 50)); // give it the chance to (wrongly) start
  t.equal(g.started.length, 1, 'the second waits: one slot');
  const third = await get(base, '/heavy?n=3'); // the queue is full
  t.equal(third.status, 503);
  t.equal(third.headers['retry-after'], '1');
  t.match(third.headers['content-type'], /application\/problem\+json/);
  t.match(JSON.parse(third.body), { status: 503, title: 'Overloaded', code: 'overloaded' });
  t.equal((await get(base, '/light')).status, 200, 'a light route never waits');
  g.finishOne();
  t.equal((await first).status, 200);
  await until(() => g.started.length === 2, 'the waiting one is admitted');
  t.same(g.started, ['heavy /heavy?n=1', 'heavy /heavy?n=2']);
  g.finishOne();
  t.equal((await second).status, 200);
});

t.test("a capture's own requests take slots but are never shed: they wait past maxWaitMs and the queue's bound", async (t) => {
  const { g, app, base } = await server(t, { running: 1, queued: 0, maxWaitMs: 50 });
  const first = get(base, '/heavy?n=1');
  await until(() => g.started.length === 1, 'the first runs');
  t.equal((await get(base, '/heavy?n=2')).status, 503, 'a client beyond the slot and the queue');
  const capture = new Reading(true);
  const captured = capture.run(() => Promise.all([app.inject('/heavy?c=1'), app.inject('/other')]));
  await new Promise((r) => setTimeout(r, 200)); // four times maxWaitMs: a client would have had its 503
  t.equal(g.started.length, 1, "the capture's requests wait for the slot: no more full-node answers at once than the bound");
  const plain = new Reading(false);
  t.equal((await plain.run(() => app.inject('/heavy?n=3'))).statusCode, 503, "a client's request in a reading is shed as any");
  g.finishOne();
  t.equal((await first).status, 200);
  await until(() => g.started.length === 2, "the slot goes to the capture's first request");
  g.finishOne();
  await until(() => g.started.length === 3, 'then to its second');
  t.same(g.started.slice(1), ['heavy /heavy?c=1', 'other']);
  g.finishOne();
  t.same((await captured).map((r) => r.statusCode), [200, 200]);
  capture.release();
  plain.release();
});

t.test('a request whose answer is made takes no slot, at once or while it waits; others wait in order', async (t) => {
  const { g, made, base } = await server(t, { running: 1, queued: 4 });
  const first = get(base, '/heavy?n=1');
  await until(() => g.started.length === 1, 'the first runs');
  made.add('/heavy?made');
  const joiner = get(base, '/heavy?made');
  await until(() => g.started.length === 2, 'a joiner runs beside it, without a slot');
  const waiting = get(base, '/heavy?later');
  const other = get(base, '/other');
  await new Promise((r) => setTimeout(r, 50));
  t.equal(g.started.length, 2, 'two distinct ones wait for the slot');
  made.add('/heavy?later'); // its answer is made meanwhile
  g.finishOne();
  t.equal((await first).status, 200);
  await until(() => g.started.length === 4, 'at the next release the waiter joins, and the other takes the slot');
  t.same(g.started.slice(2).sort(), ['heavy /heavy?later', 'other']);
  g.finishAll();
  for (const r of await Promise.all([joiner, waiting, other])) t.equal(r.status, 200);
});

t.test('waiters identical to one admitted join it once it has started, without waiting for the next slot', async (t) => {
  const { g, made, base } = await server(t, { running: 1, queued: 8 });
  const first = get(base, '/heavy?n=1');
  await until(() => g.started.length === 1, 'the first runs');
  const same = [get(base, '/heavy?same'), get(base, '/heavy?same'), get(base, '/heavy?same')];
  await new Promise((r) => setTimeout(r, 50));
  t.equal(g.started.length, 1, 'all three wait: the slot is taken');
  // the stand-in for a reading: the answer exists once one of them has started it
  const work = g.work;
  g.work = (what: string) => (made.add(what.replace(/^heavy /, '')), work(what));
  g.finishOne();
  t.equal((await first).status, 200);
  await until(() => g.started.length === 4, 'one takes the freed slot; the other two join it while it runs');
  g.finishAll();
  for (const r of await Promise.all(same)) t.equal(r.status, 200);
});

t.test('identical requests each take a slot unless they join; a follow request takes none', async (t) => {
  const { g, base } = await server(t, { running: 1, queued: 4 });
  const first = get(base, '/own?same');
  await until(() => g.started.length === 1, 'the first runs');
  const second = get(base, '/own?same');
  await new Promise((r) => setTimeout(r, 50));
  t.equal(g.started.length, 1, 'the identical second waits for the slot: it would build a second answer');
  const follow = get(base, '/own?same&follow=true');
  await until(() => g.started.length === 2, 'a follow request runs beside it, without a slot');
  t.same(g.started, ['own /own?same', 'own /own?same&follow=true']);
  g.finishOne();
  t.equal((await first).status, 200);
  await until(() => g.started.length === 3, 'the second is admitted once the first is answered');
  g.finishAll();
  t.equal((await second).status, 200);
  t.equal((await follow).status, 200);
});

t.test('the heavy routes: full-node answers and the kernel log; not the journal', async (t) => {
  t.ok(LOAD_SHED_DEFAULTS.routes.has('/v1/kernel'));
  t.ok(LOAD_SHED_DEFAULTS.routes.has('/metrics'));
  t.notOk(LOAD_SHED_DEFAULTS.routes.has('/v1/logs'), 'the journal has its own bound: journalctl children, 429 beyond');
});

t.test('a waiter whose client went away leaves the queue; past maxWaitMs the answer is 503', async (t) => {
  const { g, base } = await server(t, { running: 1, queued: 1, maxWaitMs: 200 });
  const first = get(base, '/heavy?n=1');
  await until(() => g.started.length === 1, 'the first runs');
  const ac = new AbortController();
  const leaving = get(base, '/heavy?n=2', ac.signal).catch((e: Error) => e);
  await new Promise((r) => setTimeout(r, 20));
  ac.abort();
  t.match(await leaving, { name: 'AbortError' });
  // its place in the queue is free again: this one waits (not 503 at once), then times out. The
  // server hears of the abort when its socket closes, which a loaded machine can deliver after
  // the next request: until then the queue is still full and the answer is the at-once 503.
  let waited = await get(base, '/heavy?n=3');
  for (let i = 0; i < 200 && /and 1 wait;/.test(waited.body); i++) {
    await new Promise((r) => setTimeout(r, 10));
    waited = await get(base, '/heavy?n=3');
  }
  t.equal(waited.status, 503);
  t.match(JSON.parse(waited.body).detail, /waited 200 ms/);
  t.equal(g.started.length, 1, 'neither the one that left nor the one that timed out ran');
  g.finishAll();
  t.equal((await first).status, 200);
});

t.test('the real app: 40 concurrent /v1/cgroups requests (4 distinct) over HTTP are all answered 200 (the queue absorbs them)', async (t) => {
  const host = await makeFakeScaleHost({ pods: 4, perPod: 2 });
  t.teardown(() => host.cleanup());
  // no --cri-endpoint to a runtime: the cgroups answer without names (runtime.joined false)
  const a = await testApp(['--host-root', host.root, '--cri-endpoint', 'unix:///nonexistent/cri.sock', '--log-level', 'warn']);
  t.teardown(() => a.close());
  await a.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(a.app.server.address() as AddressInfo).port}`;
  const paths = ['/v1/cgroups', '/v1/cgroups?kind=pod', '/v1/cgroups?kind=container', '/v1/cgroups?sort=memory'];
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => get(base, paths[i % paths.length]!)));
  t.same(
    answers.map((r) => r.status),
    answers.map(() => 200),
  );
  t.ok(answers.every((r) => (JSON.parse(r.body) as { items: unknown[] }).items.length > 0), 'every answer lists the cgroups');
});
