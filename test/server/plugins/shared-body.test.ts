/**
 * Identical concurrent requests share one rendered body: requests answered with
 * the same object while one of them is in flight get the same bytes from one JSON.stringify;
 * once they are answered nothing is kept (a later request renders again); other payloads
 * (a text table, a problem) are rendered by fastify as usual; a long text body (a scrape) arrives whole. Through a real HTTP server; the answer
 * object counts how often it is stringified (JSON.stringify calls its toJSON once per render).
 * The routes build a fresh answer per request around the flight's objects (`{ items, warnings }`,
 * filtered per request): those are shared too when made of the very same objects, and the render
 * is spread over turns of the event loop (counted by a setImmediate ticker, never timed).
 */
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import t from 'tap';
import { installProblemHandlers } from '../../../src/server/plugins/problems.js';
import { installSharedBody } from '../../../src/server/plugins/shared-body.js';
import { installTextFormat } from '../../../src/server/plugins/text-format.js';
import { SLICING } from '../../../src/lib/slices.js';

const get = (base: string, path: string) =>
  new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
    const req = request(`${base}${path}`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
    });
    req.on('error', reject);
    req.end();
  });

t.test('one render for every request answering the same object in flight; none kept after', async (t) => {
  let renders = 0;
  const items = Array.from({ length: 2000 }, (_, i) => ({ id: i, name: `c${i} ✓ "quoted"` }));
  let flight: Promise<object> | null = null;
  let open: (() => void) | null = null;
  const answer = () => ({ items, toJSON: () => (renders++, { items }) });
  const app = Fastify();
  installProblemHandlers(app as never);
  installTextFormat(app as never);
  installSharedBody(app);
  // a SingleFlight in miniature: concurrent requests wait for one answer object
  app.get('/list', { config: { table: () => 'A TABLE\n' } }, async () => {
    flight ??= new Promise<object>((resolve) => (open = () => resolve(answer()))).finally(() => (flight = null));
    return flight;
  });
  const scrape = `# HELP x a long text\n${'x{a="✓"} 1\n'.repeat(20_000)}`;
  app.get('/text', async (_req, reply) => reply.type('text/plain; version=0.0.4; charset=utf-8').send(scrape));
  app.get('/fail', async () => {
    throw new Error('boom');
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const many = Array.from({ length: 10 }, () => get(base, '/list'));
  for (let i = 0; i < 200 && !open; i++) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 50)); // all ten are waiting on the flight
  open!();
  const answers = await Promise.all(many);
  t.equal(renders, 1, 'rendered once for ten requests');
  t.same(new Set(answers.map((a) => a.body)).size, 1, 'the same bytes');
  t.same(JSON.parse(answers[0]!.body), { items }, 'the body is the JSON of the answer');
  t.match(answers[0]!.type, /application\/json/);

  open = null;
  const later = get(base, '/list');
  for (let i = 0; i < 200 && !open; i++) await new Promise((r) => setTimeout(r, 5));
  open!();
  t.equal((await later).status, 200);
  t.equal(renders, 2, 'a later request renders again: nothing was kept');

  open = null;
  const text = get(base, '/list?format=text');
  for (let i = 0; i < 200 && !open; i++) await new Promise((r) => setTimeout(r, 5));
  open!();
  const tx = await text;
  t.equal(tx.body, 'A TABLE\n', 'a text table passes through');
  t.match(tx.type, /text\/plain/);
  const texts = await Promise.all(Array.from({ length: 5 }, () => get(base, '/text')));
  for (const x of texts) {
    t.equal(x.body, scrape, 'a long text body arrives whole, multi-byte characters intact');
    t.match(x.type, /^text\/plain; version=0\.0\.4/, 'its content type kept');
  }
  const fail = await get(base, '/fail');
  t.equal(fail.status, 500);
  t.match(JSON.parse(fail.body), { status: 500 }, 'a problem is rendered as before');
});

t.test('fresh answers around the same flight objects share one render, spread over turns of the loop', async (t) => {
  // the real shape: a flight resolves to shared records; each request filters them into its own answer
  let stringified = 0;
  let tick = 0;
  const ticksSeen = new Map<number, number>();
  const record = (i: number) => ({
    toJSON: () => {
      stringified++;
      ticksSeen.set(tick, (ticksSeen.get(tick) ?? 0) + 1);
      return { id: `${i}`.padStart(64, 'c'), name: `container-${i} "ünï"`, labels: { 'io.kubernetes.pod.name': `pod-${i}`, note: 'x'.repeat(300) } };
    },
  });
  let records = Array.from({ length: 8000 }, (_, i) => record(i));
  let flight: Promise<typeof records> | null = null;
  let open: (() => void) | null = null;
  const app = Fastify();
  installProblemHandlers(app as never);
  installTextFormat(app as never);
  installSharedBody(app);
  app.get('/containers', async (req) => {
    flight ??= new Promise<typeof records>((resolve) => (open = () => resolve(records))).finally(() => (flight = null));
    const all = await flight;
    const q = req.query as { odd?: string };
    return { items: all.filter((_, i) => q.odd === undefined || i % 2 === 1), warnings: [] as string[] };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const waitOpen = async () => {
    for (let i = 0; i < 200 && !open; i++) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 50));
    open!();
    open = null;
  };
  let ticking = true;
  const ticker = () => {
    tick++;
    if (ticking) setImmediate(ticker);
  };
  setImmediate(ticker);
  t.teardown(() => void (ticking = false));

  const same = Array.from({ length: 8 }, () => get(base, '/containers'));
  const other = get(base, '/containers?odd=1');
  await waitOpen();
  const answers = await Promise.all(same);
  const odd = await other;
  const turns = [...ticksSeen.values()]; // before this test's own JSON.stringify calls below
  t.equal(stringified, records.length + records.length / 2, 'each record stringified once for the eight identical requests, once more for the other URL');
  t.equal(new Set(answers.map((a) => a.body)).size, 1, 'the same bytes');
  const want = JSON.stringify({ items: records, warnings: [] });
  t.equal(answers[0]!.body, want, 'the JSON of the answer');
  t.equal(odd.body, JSON.stringify({ items: records.filter((_, i) => i % 2 === 1), warnings: [] }), 'another filter, its own answer');
  // ~3 MB: with 256 Ki-character slices the render took at least ten turns of the loop, each bounded
  t.ok(turns.length >= 10, `the records were stringified over ${turns.length} turns of the event loop`);
  // a slice of 256 Ki characters holds ~570 records of ~460 characters (one more ends it); two renders (two URLs) may share a turn
  const perSlice = Math.ceil(SLICING.sliceChars / JSON.stringify(records[0]).length) + 1;
  t.ok(Math.max(...turns) <= 2 * perSlice, `at most ${Math.max(...turns)} records in one turn (bound ${2 * perSlice})`);

  // a new flight (new objects, a node that changed): rendered again, never the earlier bytes
  stringified = 0;
  records = records.map((_, i) => record(i + 1));
  const later = Array.from({ length: 3 }, () => get(base, '/containers'));
  await waitOpen();
  const again = await Promise.all(later);
  t.equal(stringified, records.length, 'the new objects rendered once for the three');
  t.equal(again[0]!.body, JSON.stringify({ items: records, warnings: [] }), 'the answer of now');
  t.not(again[0]!.body, want);
});
