/**
 * One reading of the node through the real HTTP server, over the FAKE CRI runtime and a FAKE host
 * root (DESIGN.md "One reading of the node"):
 * - requests inside --max-age are answered from one reading: the same observedAt (header and
 *   JSON field), and the runtime listed once for all of them (the FAKE runtime counts its calls);
 * - with --max-age 0 every answer's observedAt is at or after its request was sent, and each
 *   request lists the runtime itself;
 * - a request whose client goes away while it makes the answer others wait for leaves them to
 *   make their own (they are answered);
 * - an idle agent holds no reading: after requests answered, cut by their client and shared,
 *   nothing read for them is reachable after a full GC (watched through WeakRefs).
 */
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import t, { type Test } from 'tap';
import { makeFakeScaleHost } from '../fixtures/fake-node.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HEADER = 'x-nodetruth-observed-at';

async function fakeNode(t: Test, maxAge: string, flags: string[] = []) {
  const host = await makeFakeScaleHost({ pods: 3, perPod: 2, journal: false, logLines: 5 });
  const cri = new FakeCriServer(host.node);
  await cri.start();
  const a = await testApp(['--host-root', host.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', host.kmsg, '--kubelet-healthz', 'http://127.0.0.1:1/healthz', '--journalctl', '/nonexistent', '--max-age', maxAge, ...flags]);
  await a.app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(async () => {
    await a.app.close();
    await a.close();
    await cri.stop();
    host.cleanup();
  });
  const base = `http://127.0.0.1:${(a.app.server.address() as AddressInfo).port}`;
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, { headers });
    return { status: res.status, observedAt: res.headers.get(HEADER), type: res.headers.get('content-type') ?? '', body: await res.text() };
  };
  return { host, cri, a, base, get, lists: () => cri.calls.ListContainers ?? 0 };
}

t.test('two requests inside --max-age: one reading, the same observedAt, the runtime listed once', async (t) => {
  const n = await fakeNode(t, '1m');
  const id = n.host.node.containers.find((c) => c.state === 'CONTAINER_RUNNING')!.id;
  const before = n.lists();
  const first = await n.get('/v1/containers');
  const second = await n.get(`/v1/containers/${id}`);
  const concurrent = await Promise.all([n.get('/v1/pods'), n.get('/v1/containers'), n.get('/v1/containers?format=text'), n.get('/metrics')]);
  for (const r of [first, second, ...concurrent]) t.equal(r.status, 200);
  t.ok(first.observedAt && !Number.isNaN(Date.parse(first.observedAt)), `observedAt ${first.observedAt}`);
  for (const r of [second, ...concurrent]) t.equal(r.observedAt, first.observedAt, 'the same reading');
  t.equal((JSON.parse(first.body) as { observedAt: string }).observedAt, first.observedAt, 'the JSON answer says it too');
  t.equal((JSON.parse(second.body) as { observedAt: string }).observedAt, first.observedAt);
  t.equal(n.lists() - before, 1, 'ListContainers once for six answers');
  t.equal(concurrent[1]!.body, first.body, 'the same query in the same reading: the same answer');
  t.match(concurrent[2]!.type, /^text\/plain/, 'a text answer stays text');
  t.notOk(concurrent[2]!.body.includes('observedAt'), 'and carries no JSON field');
  t.match(concurrent[3]!.body, /^# HELP /m, 'the scrape is the Prometheus text');
});

t.test('inside --max-age, requests for an answer its reading made take no load-shed slot; distinct ones still wait', async (t) => {
  const n = await fakeNode(t, '1m');
  // a burst of identical requests in a new reading: one makes the answer, all get it
  const burst = await Promise.all(Array.from({ length: 20 }, () => n.get('/v1/containers')));
  t.same(new Set(burst.map((r) => r.status)), new Set([200]), 'no 503, no 429');
  t.equal(new Set(burst.map((r) => r.observedAt)).size, 1, 'one observedAt');
  t.equal(new Set(burst.map((r) => r.body)).size, 1, 'one answer');
  // both of the shedder's two slots held by distinct answers measured over a window
  let slowDone = false;
  const slow = Promise.all(['3s', '4s'].map((w) => n.get(`/v1/throttling?window=${w}`).then((r) => ((slowDone = true), r))));
  await sleep(300);
  let distinctDone = false;
  const distinct = n.get('/v1/kernel?tailLines=5').then((r) => ((distinctDone = true), r));
  const joined = await Promise.all(Array.from({ length: 20 }, () => n.get('/v1/containers')));
  t.notOk(slowDone, 'the made answer was sent while both slots were held (neither window over)');
  t.same(new Set(joined.map((r) => r.status)), new Set([200]));
  t.same(new Set(joined.map((r) => r.observedAt)), new Set([burst[0]!.observedAt]), 'from the same reading');
  t.equal(joined[0]!.body, burst[0]!.body);
  await sleep(200);
  t.notOk(distinctDone, 'a distinct answer still waits for a slot');
  for (const r of await slow) t.equal(r.status, 200);
  t.equal((await distinct).status, 200);
});

t.test('--max-age 0: every answer observed after its request was sent; no reading shared', async (t) => {
  const n = await fakeNode(t, '0');
  const before = n.lists();
  const asks: { sent: number; r: Awaited<ReturnType<typeof n.get>> }[] = [];
  for (let i = 0; i < 3; i++) {
    const sent = Date.now();
    asks.push({ sent, r: await n.get('/v1/containers') });
  }
  const together = await Promise.all([0, 1, 2].map(async () => {
    const sent = Date.now();
    return { sent, r: await n.get('/v1/containers') };
  }));
  asks.push(...together);
  for (const { sent, r } of asks) {
    t.equal(r.status, 200);
    const observed = Date.parse(r.observedAt!);
    t.ok(observed >= sent, `observed ${r.observedAt} at or after the request was sent (${new Date(sent).toISOString()})`);
    t.equal((JSON.parse(r.body) as { observedAt: string }).observedAt, r.observedAt);
  }
  t.equal(n.lists() - before, asks.length, `the runtime listed for each of the ${asks.length} requests`);
});

t.test('the request making an answer goes away: the others waiting for it make their own', async (t) => {
  const n = await fakeNode(t, '1m');
  n.cri.delayMs = 300;
  // the first: its client goes away while the runtime answers
  const gone = request(`${n.base}/v1/containers?namespace=ns-1`, { agent: false });
  gone.on('error', () => {});
  gone.end();
  await sleep(50);
  const waiting = n.get('/v1/containers?namespace=ns-1');
  await sleep(50);
  gone.destroy();
  const r = await waiting;
  t.equal(r.status, 200, `answered: ${r.body.slice(0, 200)}`);
  const items = (JSON.parse(r.body) as { items: { podNamespace: string }[] }).items;
  t.ok(items.length > 0 && items.every((c) => c.podNamespace === 'ns-1'), `its own answer: ${items.length} containers of ns-1`);
});

t.test('an idle agent holds no reading: nothing read for its requests stays reachable after a full GC', async (t) => {
  const n = await fakeNode(t, '200ms');
  /** everything the runtime's lists and the rows were, watched */
  const watched: WeakRef<object>[] = [];
  const cri = n.a.deps.cri!;
  const list = cri.listContainers.bind(cri);
  cri.listContainers = async () => {
    const got = await list();
    watched.push(new WeakRef(got));
    return got;
  };
  const runtime = n.a.deps.runtime!;
  const rows = runtime.containers.bind(runtime);
  runtime.containers = async () => {
    const got = await rows();
    watched.push(new WeakRef(got));
    return got;
  };
  // answered, shared, concurrent, and one cut by its client while the runtime answers
  await n.get('/v1/containers');
  await Promise.all([n.get('/v1/containers'), n.get('/v1/pods'), n.get('/metrics'), n.get('/v1/cgroups')]);
  n.cri.delayMs = 200;
  const cut = request(`${n.base}/v1/containers?namespace=ns-2`, { agent: false });
  cut.on('error', () => {});
  cut.end();
  await sleep(50);
  cut.destroy();
  await sleep(400);
  n.cri.delayMs = 0;
  t.ok(watched.length >= 2, `${watched.length} results watched`);
  // polled, not timed: once max-age has passed the reading is let go; a loaded machine runs timers late
  let alive = watched.length;
  for (let i = 0; i < 150 && alive > 0; i++) {
    await sleep(200);
    for (let j = 0; j < 2; j++) {
      gc();
      await new Promise((r) => setImmediate(r));
    }
    alive = watched.filter((w) => w.deref() !== undefined).length;
  }
  t.equal(alive, 0, `none of the ${watched.length} lists and row sets is reachable`);
});
