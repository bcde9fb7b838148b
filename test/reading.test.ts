/**
 * src/reading.ts with the real SingleFlight: inside a reading each key is computed once (its
 * rejection too); work outside any reading never joins a reading's, nor the other way round,
 * and shares in flight only; a released reading keeps nothing. Readings: a request gets the
 * newest reading begun at most maxAge before it arrived, else a new one; with 0, one begun
 * after it arrived; the reading is released once nobody holds it and no request may get it.
 */
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { SingleFlight } from '../src/lib/concurrency.js';
import { Reading, Readings } from '../src/reading.js';

const counter = () => {
  let n = 0;
  return { read: () => new Promise<number>((resolve) => setTimeout(() => resolve(++n), 30)), get calls() { return n; } };
};

t.test('inside a reading a key is read once, and kept until the reading is released', async (t) => {
  const sf = new SingleFlight();
  const c = counter();
  const r = new Reading();
  const first = await r.run(() => sf.do('index', c.read));
  await new Promise((res) => setTimeout(res, 10)); // settled: a SingleFlight alone would read again now
  t.equal(await r.run(() => sf.do('index', c.read)), first, 'the same result later in the reading');
  t.equal(await r.run(() => Promise.resolve().then(() => sf.do('index', c.read))), first, 'through the async work started inside it');
  t.equal(c.calls, 1);
  t.equal(await r.run(() => sf.do('other', c.read)), 2, 'another key is its own read');
  t.equal(r.run(() => Reading.current()), r);
  r.release();
  t.equal(r.run(() => Reading.current()), undefined, 'a released reading is no reading');
  t.equal(await r.run(() => sf.do('index', c.read)), 3, 'after release: read again');
  t.equal(Reading.current(), undefined);
});

t.test('work outside a reading never joins a reading\'s, nor the other way round', async (t) => {
  const sf = new SingleFlight();
  const c = counter();
  const r = new Reading();
  t.teardown(() => r.release());
  const inside = r.run(() => sf.do('index', c.read));
  const outside = sf.do('index', c.read); // while the reading's read is in flight
  const outside2 = sf.do('index', c.read);
  const inside2 = r.run(() => sf.do('index', c.read));
  const [a, b, b2, a2] = await Promise.all([inside, outside, outside2, inside2]);
  t.equal(a, a2, 'the reading shares its own read');
  t.equal(b, b2, 'concurrent work outside shares its own in flight');
  t.not(a, b, 'but not each other\'s');
  t.equal(c.calls, 2);
  t.equal(await sf.do('index', c.read), 3, 'outside, nothing is kept once it settled');
});

t.test('a failed read is the reading\'s answer too (one deadline, not one per answer)', async (t) => {
  const sf = new SingleFlight();
  let calls = 0;
  const fail = () => new Promise<never>((_r, reject) => setTimeout(() => reject(new Error(`runtime did not answer (${++calls})`)), 10));
  const r = new Reading();
  t.teardown(() => r.release());
  await t.rejects(r.run(() => sf.do('index', fail)), /\(1\)/);
  await t.rejects(r.run(() => sf.do('index', fail)), /\(1\)/);
  t.equal(calls, 1);
  await t.rejects(sf.do('index', fail), /\(2\)/, 'outside it, asked again');
});

t.test('two readings keep apart', async (t) => {
  const sf = new SingleFlight();
  const c = counter();
  const r1 = new Reading();
  const r2 = new Reading();
  t.teardown(() => (r1.release(), r2.release()));
  const [a, b] = await Promise.all([r1.run(() => sf.do('k', c.read)), r2.run(() => sf.do('k', c.read))]);
  t.not(a, b);
  t.equal(await r1.run(() => sf.do('k', c.read)), a);
  t.equal(await r2.run(() => sf.do('k', c.read)), b);
});

t.test('Readings: requests within maxAge share one; later ones get a new one; the old one is released when its last holder leaves', async (t) => {
  const rs = new Readings(60_000);
  const a = rs.enter(performance.now());
  const b = rs.enter(performance.now());
  t.equal(a, b, 'two requests inside max-age: one reading');
  t.equal(a.holders, 2);
  // a request that arrived more than maxAge after the reading began
  const c = rs.enter(a.began + 60_001);
  t.not(c, a, 'too old for it: a new reading');
  t.ok(a.open, 'the old one is kept while requests hold it');
  rs.leave(a);
  t.ok(a.open);
  rs.leave(b);
  t.notOk(a.open, 'released with its last holder: no request may get it any more');
  t.equal(rs.open, 1, 'the new one only');
  rs.leave(c);
  t.ok(c.open, 'unheld but young: kept for the requests arriving within max-age');
  t.equal(rs.enter(performance.now()), c, 'and given to the next');
  rs.leave(c);
});

t.test('Readings with max-age 0: every request gets a reading begun after it arrived, released as soon as it leaves', async (t) => {
  const rs = new Readings(0);
  const arrivedA = performance.now();
  const a = rs.enter(arrivedA);
  const arrivedB = performance.now() + 0.001; // strictly after a began
  const b = rs.enter(arrivedB);
  t.not(a, b, 'no sharing with a reading begun before the request arrived');
  t.ok(a.began >= arrivedA && b.began >= arrivedB, 'each began once its request had arrived');
  t.ok(a.startedAt.getTime() <= b.startedAt.getTime());
  rs.leave(a);
  rs.leave(b);
  t.notOk(a.open || b.open, 'both released');
  t.equal(rs.open, 0, 'none kept');
});

t.test('Readings: an unheld reading is released once max-age has passed', async (t) => {
  const rs = new Readings(50);
  const r = rs.enter(performance.now());
  rs.leave(r);
  t.ok(r.open, 'kept for max-age');
  // polled, not timed: the timer runs late on a loaded machine
  for (let i = 0; i < 3000 && r.open; i++) await new Promise((res) => setTimeout(res, 10));
  t.notOk(r.open, 'released once max-age passed');
  t.equal(rs.open, 0, 'an idle agent holds no reading');
  t.not(rs.enter(performance.now()), r, 'the next request gets a new one');
});

t.test('Readings tell their watch when the agent goes idle (last reading released) and busy again', async (t) => {
  const rs = new Readings(40);
  const heard: string[] = [];
  rs.watch = { idle: () => heard.push('idle'), busy: () => heard.push('busy') };
  const a = rs.enter(performance.now());
  const b = rs.enter(performance.now());
  t.same(heard, ['busy'], 'one reading shared: busy once');
  rs.leave(a);
  rs.leave(b);
  t.same(heard, ['busy'], 'still open until max-age has passed');
  await new Promise((res) => setTimeout(res, 80));
  t.same(heard, ['busy', 'idle'], 'released: idle, once');
  // a request that arrives after the newest expired, while it is still held: the old one is
  // dropped to make the next, and the agent is not idle in between
  const c = rs.enter(performance.now());
  await new Promise((res) => setTimeout(res, 60));
  const d = rs.enter(performance.now());
  t.not(c, d);
  t.same(heard, ['busy', 'idle', 'busy'], 'no idle while one reading replaces another');
  rs.leave(c);
  t.same(heard, ['busy', 'idle', 'busy'], 'the older released, the newer still held');
  const z = new Readings(0);
  const zh: string[] = [];
  z.watch = { idle: () => zh.push('idle'), busy: () => zh.push('busy') };
  z.leave(z.enter(performance.now()));
  t.same(zh, ['busy', 'idle'], 'max-age 0: idle as soon as its last holder leaves');
  rs.leave(d);
  await new Promise((res) => setTimeout(res, 80));
  t.same(heard, ['busy', 'idle', 'busy', 'idle']);
  t.equal(rs.open, 0);
});
