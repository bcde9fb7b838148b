/** lib/guard.ts: the one guard for calls that may never return (statfs, /proc cmdline reads). */
import t from 'tap';
import { Guard } from '../../src/lib/guard.js';

const guard = (max: number, timeoutMs: number) => new Guard({ what: 'test call', hangsWhen: 'it hangs', whileStuck: 'answers lack it', max, timeoutMs });
const never = () => new Promise<never>(() => {});
/** a call that returns when told to */
function held<T>(value: T) {
  let release!: () => void;
  const p = new Promise<T>((resolve) => (release = () => resolve(value)));
  return { call: () => p, release };
}

t.test('at most max at once; a freed slot goes to the longest waiter', async (t) => {
  const g = guard(2, 60_000);
  const x = held(1);
  const y = held(2);
  const rx = g.run(x.call);
  const ry = g.run(y.call);
  t.equal(g.busy, 2);
  const order: string[] = [];
  const a = g.run(async () => 'a').then((r) => order.push(`a ${r.ok}`));
  const b = g.run(async () => 'b').then((r) => order.push(`b ${r.ok}`));
  x.release();
  await a;
  t.same(order, ['a true'], 'the first waiter, not the second');
  y.release();
  await b;
  t.same(order, ['a true', 'b true']);
  t.match(await rx, { ok: true, value: 1 });
  t.match(await ry, { ok: true, value: 2 });
  t.equal(g.busy, 0);
});

t.test('a waiter gives up at its deadline or when its signal aborts, and is forgotten', async (t) => {
  // the slot holder's own deadline is far off, so only the waiters' deadlines and signals are in play
  const g = guard(1, 60_000);
  const x = held(1);
  const first = g.run(x.call);
  const short = guard(1, 30);
  const y = held(1);
  const holder = short.run(y.call);
  t.match(await short.run(async () => 2), { ok: false, timedOut: false, outstanding: false, error: /no free test call slot within 30 ms/ });
  y.release();
  await holder;
  const ac = new AbortController();
  const gone = g.run(async () => 3, { signal: ac.signal });
  ac.abort();
  t.match(await gone, { ok: false, error: 'the request ended' });
  t.match(await g.run(async () => 4, { signal: ac.signal }), { ok: false, error: 'the request ended' }, 'an aborted signal does not wait');
  x.release();
  t.match(await first, { ok: true, value: 1 });
  await new Promise((r) => setImmediate(r));
  t.equal(g.busy, 0, 'no waiter that gave up took the freed slot');
  t.match(await g.run(async () => 5), { ok: true, value: 5 });
});

t.test('a late call keeps its slot until it returns; while max are stuck, calls are refused at once', async (t) => {
  const g = guard(2, 20);
  const x = held('late');
  t.match(await g.run(x.call), { ok: false, timedOut: true, outstanding: true, error: 'test call did not return within 20 ms (it hangs)' });
  t.equal(g.stuck, 1);
  t.equal(g.busy, 1);
  t.match(g.readiness(), { ok: false, detail: /^1 of 2 test call calls stuck past 20 ms \(it hangs\); answers lack it$/ });
  await g.run(never);
  let made = false;
  // a refusal made without a timer settles before the loop's next turn
  const r = await Promise.race([g.run(async () => (made = true)), new Promise<'waited'>((resolve) => setImmediate(() => resolve('waited')))]);
  t.match(r, { ok: false, timedOut: false, outstanding: false, error: /all 2 are held by calls stuck past 20 ms/ }, 'refused without waiting for a slot');
  t.notOk(made, 'the call was not made');
  x.release();
  await new Promise((r) => setImmediate(r));
  t.equal(g.stuck, 1, 'the late call returned: no longer stuck');
  t.equal(g.busy, 1, 'its slot is free again');
  t.equal(g.timedOut, 2);
});

t.test('a keyed call still out is not made again; the last outcome per key is kept', async (t) => {
  const g = guard(4, 20);
  let calls = 0;
  const hung = () => {
    calls++;
    return never();
  };
  const a = await g.run(hung, { key: '/mnt/nfs' });
  t.match(a, { ok: false, timedOut: true, outstanding: true });
  const b = await g.run(hung, { key: '/mnt/nfs' });
  t.match(b, { ok: false, timedOut: false, outstanding: true, error: /test call has not returned since \S+ \(it hangs\)/ });
  t.equal(b.ok === false && b.since, a.ok === false && a.since, 'since: when the call still out began');
  t.equal(calls, 1);
  await g.run(async () => 1, { key: '/' });
  await t.resolves(g.run(async () => Promise.reject(Object.assign(new Error('denied'), { code: 'EACCES' })), { key: '/secret' }));
  t.match(await g.run(async () => Promise.reject(Object.assign(new Error('denied'), { code: 'EACCES' }))), { ok: false, timedOut: false, error: 'EACCES', cause: { code: 'EACCES' } }, "the call's own error is an outcome with its code");
  t.match(g.answers(), [
    { key: '/mnt/nfs', ok: false, outstanding: true },
    { key: '/', ok: true },
    { key: '/secret', ok: true },
  ], 'a call that failed with its own error returned');
  t.match(g.readiness(), { ok: false, detail: /: \/mnt\/nfs;/ });
});

t.test('readiness: answering', async (t) => {
  const g = guard(2, 1000);
  await g.run(async () => 1);
  t.same(g.readiness(), { ok: true, detail: 'test call calls answering (0/2 slots in use, 0 timed out since start)' });
});
