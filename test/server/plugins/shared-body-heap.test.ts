/**
 * Nothing the shared body plugin renders outlives its last request (idle memory), checked
 * from the heap after a full GC, never from a memory figure: the answers and the body Buffers are
 * watched through WeakRefs, which a full GC clears once nothing holds them.
 *
 * The hostile shape: a client that goes away while its answer is being made (an abort while it
 * waits in the shed queue or on a shared flight: simply closing the connection) has its response
 * closed before the plugin holds a rendering for it; 'close' never fires twice, so a rendering
 * registered then would stay in the plugin's table for good: up to four per URL, the URL being
 * the client's, and every long text body (a 6.5 MB scrape) without bound, and a later identical
 * request would no longer share a render (the URL's table full).
 * Through a real HTTP server (the plugins in the app's order); aborts are real socket closes.
 */
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Fastify from 'fastify';
import t from 'tap';
import { installProblemHandlers } from '../../../src/server/plugins/problems.js';
import { installSharedBody } from '../../../src/server/plugins/shared-body.js';
import { installTextFormat } from '../../../src/server/plugins/text-format.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** a full GC, a turn for the weak references to be cleared, twice (a WeakRef target survives the GC of the turn that made it) */
const fullGc = async () => {
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(20);
  }
};

const get = (base: string, path: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${base}${path}`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });

t.test('answers and bodies of clients gone before their answer was made are not kept', async (t) => {
  let renders = 0;
  /** every answer object made, and every body Buffer the plugin handed to the socket */
  const answers: WeakRef<object>[] = [];
  const bodies: WeakRef<Buffer>[] = [];
  const waiting: (() => void)[] = [];
  const gate = () => new Promise<void>((resolve) => waiting.push(resolve));
  /** the server's side of the latest request, to see when it has noticed its client's close */
  let lastResponse: { destroyed: boolean } | null = null;
  let shared: Promise<object> | null = null;
  const app = Fastify();
  installProblemHandlers(app as never);
  installTextFormat(app as never);
  installSharedBody(app);
  app.addHook('onRequest', async (_req, reply) => {
    lastResponse = reply.raw;
  });
  app.addHook('onSend', async (_req, _reply, payload) => {
    if (Buffer.isBuffer(payload)) bodies.push(new WeakRef(payload));
    return payload;
  });
  // a flight in miniature: the answer is made once the test opens the gate; the same object for
  // every request waiting on it (as the routes' SingleFlight), and the records of a real answer
  app.get('/list', async () => {
    shared ??= gate()
      .then(() => {
        const answer = { items: Array.from({ length: 3000 }, (_, i) => ({ id: `${i}`.padStart(64, 'c'), state: 'CONTAINER_RUNNING' })), toJSON: undefined as unknown };
        answer.toJSON = () => (renders++, { items: answer.items });
        answers.push(new WeakRef(answer));
        return answer;
      })
      .finally(() => (shared = null));
    return shared;
  });
  // a long text body (a scrape): new text for every request
  let scrapes = 0;
  app.get('/metrics', async (_req, reply) => {
    await gate();
    return reply.type('text/plain; version=0.0.4; charset=utf-8').send(`# scrape ${++scrapes}\n${'container_memory_working_set_bytes{id="x"} 1\n'.repeat(6000)}`);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const settle = async (n: number) => {
    for (let i = 0; i < 400 && waiting.length < n; i++) await sleep(5);
    return waiting.length;
  };
  /** a client that sends its request and closes the connection while the answer is being made */
  const abandon = async (path: string) => {
    const req = request(`${base}${path}`, { agent: false });
    req.on('error', () => {});
    req.end();
    t.equal(await settle(1), 1, `${path}: the handler waits`);
    req.destroy();
    for (let i = 0; i < 400 && !lastResponse?.destroyed; i++) await sleep(5);
    t.ok(lastResponse?.destroyed, `${path}: the server saw the client go before the answer was made`);
    waiting.shift()!();
    await sleep(50);
  };

  // the same URL more often than renderings are shared per URL, distinct URLs, and scrapes
  for (let i = 0; i < 6; i++) await abandon('/list');
  for (let i = 0; i < 6; i++) await abandon(`/list?client=${i}`);
  for (let i = 0; i < 4; i++) await abandon('/metrics');
  // answered requests, for comparison: their answers and bodies go too
  const answered = get(base, '/list');
  t.equal(await settle(1), 1);
  waiting.shift()!();
  t.equal((await answered).status, 200);
  const scrape = get(base, '/metrics');
  t.equal(await settle(1), 1);
  waiting.shift()!();
  t.match((await scrape).body, /^# scrape 5\n/);
  await sleep(50);

  t.equal(answers.length, 13, 'thirteen answers were made');
  await fullGc();
  t.equal(answers.filter((r) => r.deref() !== undefined).length, 0, 'no answer is reachable after a full GC');
  t.equal(bodies.filter((r) => r.deref() !== undefined).length, 0, `none of the ${bodies.length} body Buffers is reachable after a full GC`);

  // and sharing still works for that URL: three identical requests in flight, one render
  renders = 0;
  const three = Array.from({ length: 3 }, () => get(base, '/list'));
  for (let i = 0; i < 400 && !shared; i++) await sleep(5);
  await sleep(50); // all three wait on the same flight
  t.equal(waiting.length, 1, 'one flight for the three');
  waiting.shift()!();
  const got = await Promise.all(three);
  t.equal(new Set(got.map((g) => g.body)).size, 1, 'the same bytes');
  t.equal(renders, 1, 'rendered once for the three: the URL is not left full of abandoned renderings');
});
