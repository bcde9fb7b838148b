import t from 'tap';
import { withinDeadline } from '../../src/lib/deadline.js';

t.test('an answer within the deadline, an error, and a source that never answers', async (t) => {
  t.match(await withinDeadline(Promise.resolve(42), 1000, 'x'), { ok: true, value: 42 });
  t.match(await withinDeadline(() => Promise.reject(new Error('boom')), 1000, 'x'), { ok: false, timedOut: false, error: 'boom' });
  t.match(await withinDeadline(() => { throw new Error('sync boom'); }, 1000, 'x'), { ok: false, timedOut: false, error: 'sync boom' });
  t.match(await withinDeadline(new Promise(() => {}), 20, 'the runtime'), { ok: false, timedOut: true, error: 'the runtime did not answer within 20 ms' });
});

t.test('a budget already spent is late at once, without a TimeoutNegativeWarning', async (t) => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on('warning', onWarning);
  t.teardown(() => process.off('warning', onWarning));
  t.match(await withinDeadline(new Promise(() => {}), -702, 'the runtime'), { ok: false, timedOut: true, error: 'the runtime did not answer within 0 ms' });
  await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
  t.same(warnings, []);
});

t.test('work given as a function gets a signal that aborts at the deadline, not before', async (t) => {
  let seen: AbortSignal | undefined;
  const o = await withinDeadline((signal) => {
    seen = signal;
    return new Promise(() => {});
  }, 20, 'node facts');
  t.match(o, { ok: false, timedOut: true, error: 'node facts did not answer within 20 ms', cause: null });
  t.equal(seen?.aborted, true, 'a source checking its signal stops reading');
  let kept: AbortSignal | undefined;
  t.match(await withinDeadline(async (signal) => ((kept = signal), 1), 1000, 'x'), { ok: true, value: 1 });
  t.equal(kept?.aborted, false, 'an answer in time is not aborted');
});

t.test('whatever is thrown is described, briefly, and kept as the cause', async (t) => {
  const hostile = {
    get message(): string {
      throw new Error('getter');
    },
  };
  t.match(await withinDeadline(() => Promise.reject(hostile), 1000, 'x'), { ok: false, timedOut: false, error: 'an error that cannot be described', cause: hostile });
  t.match(await withinDeadline(() => Promise.reject(null), 1000, 'x'), { ok: false, error: 'null' });
  t.match(await withinDeadline(() => Promise.reject(Object.create(null)), 1000, 'x'), { ok: false, error: 'an error that cannot be described' });
  const long = await withinDeadline(() => Promise.reject(new Error('x'.repeat(100_000))), 1000, 'x');
  t.ok(!long.ok && long.error.length === 2001 && long.error.endsWith('…'), 'a megabyte message is cut to 2,000 characters');
});
