import t from 'tap';
import { withinDeadline } from '../../src/util/deadline.js';

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
