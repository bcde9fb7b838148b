/** lib/slots.ts: the slot pool behind the statfs box and the /proc read limiter. */
import t from 'tap';
import { Slots } from '../../src/lib/slots.js';

const far = () => Date.now() + 60_000;

t.test('at most max at once; a release hands the slot to the longest waiter', async (t) => {
  const s = new Slots(2);
  t.equal(await s.acquire(far()), true);
  t.equal(await s.acquire(far()), true);
  t.equal(s.busy, 2);
  const order: string[] = [];
  const a = s.acquire(far()).then((ok) => order.push(`a ${ok}`));
  const b = s.acquire(far()).then((ok) => order.push(`b ${ok}`));
  s.release();
  await a;
  t.same(order, ['a true'], 'the first waiter, not the second');
  s.release();
  await b;
  t.same(order, ['a true', 'b true']);
  t.equal(s.busy, 2);
});

t.test('a waiter gives up at its deadline or on abort, and is forgotten', async (t) => {
  const s = new Slots(1);
  t.equal(await s.acquire(far()), true);
  t.equal(await s.acquire(Date.now() + 20), false, 'no slot came free in time');
  const ac = new AbortController();
  const gone = s.acquire(far(), ac.signal);
  ac.abort();
  t.equal(await gone, false, 'the request ended');
  t.equal(await s.acquire(far(), ac.signal), false, 'an aborted signal does not wait');
  s.release();
  t.equal(s.busy, 0, 'neither waiter that gave up took the freed slot');
  t.equal(await s.acquire(far()), true);
});
