/**
 * lib/moment.ts with the real SingleFlight: inside a moment each key is computed
 * once (its rejection too); a client's request (outside the moment) never joins
 * the moment's work, nor the moment a client's; after `end` nothing is kept.
 */
import t from 'tap';
import { SingleFlight } from '../../src/lib/concurrency.js';
import { Moment } from '../../src/lib/moment.js';

const counter = () => {
  let n = 0;
  return { read: () => new Promise<number>((resolve) => setTimeout(() => resolve(++n), 30)), get calls() { return n; } };
};

t.test('inside a moment a key is read once, and kept until the moment ends', async (t) => {
  const sf = new SingleFlight();
  const c = counter();
  const m = new Moment();
  const first = await m.run(() => sf.do('index', c.read));
  await new Promise((r) => setTimeout(r, 10)); // settled: a SingleFlight alone would read again now
  t.equal(await m.run(() => sf.do('index', c.read)), first, 'the same result later in the moment');
  t.equal(await m.run(() => Promise.resolve().then(() => sf.do('index', c.read))), first, 'through the async work started inside it');
  t.equal(c.calls, 1);
  t.equal(await m.run(() => sf.do('other', c.read)), 2, 'another key is its own read');
  m.end();
  t.ok(m.to instanceof Date, 'the moment says when it ended');
  t.equal(await m.run(() => sf.do('index', c.read)), 3, 'after end: read again');
  t.equal(Moment.current(), undefined);
});

t.test('a request outside the moment never joins the moment\'s work, nor the other way round', async (t) => {
  const sf = new SingleFlight();
  const c = counter();
  const m = new Moment();
  t.teardown(() => m.end());
  const inside = m.run(() => sf.do('index', c.read));
  const outside = sf.do('index', c.read); // while the moment's read is in flight
  const outside2 = sf.do('index', c.read);
  const inside2 = m.run(() => sf.do('index', c.read));
  const [a, b, b2, a2] = await Promise.all([inside, outside, outside2, inside2]);
  t.equal(a, a2, 'the moment shares its own read');
  t.equal(b, b2, 'concurrent requests outside share theirs (SingleFlight as before)');
  t.not(a, b, 'but not each other\'s');
  t.equal(c.calls, 2);
});

t.test('a failed read is the moment\'s answer too (one deadline, not one per answer)', async (t) => {
  const sf = new SingleFlight();
  let calls = 0;
  const fail = () => new Promise<never>((_r, reject) => setTimeout(() => reject(new Error(`runtime did not answer (${++calls})`)), 10));
  const m = new Moment();
  t.teardown(() => m.end());
  await t.rejects(m.run(() => sf.do('index', fail)), /\(1\)/);
  await t.rejects(m.run(() => sf.do('index', fail)), /\(1\)/);
  t.equal(calls, 1);
  await t.rejects(sf.do('index', fail), /\(2\)/, 'outside it, asked again');
});

t.test('two moments keep apart', async (t) => {
  const sf = new SingleFlight();
  const c = counter();
  const m1 = new Moment();
  const m2 = new Moment();
  t.teardown(() => (m1.end(), m2.end()));
  const [a, b] = await Promise.all([m1.run(() => sf.do('k', c.read)), m2.run(() => sf.do('k', c.read))]);
  t.not(a, b);
  t.equal(await m1.run(() => sf.do('k', c.read)), a);
  t.equal(await m2.run(() => sf.do('k', c.read)), b);
});
