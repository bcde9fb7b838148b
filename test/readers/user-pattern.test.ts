/** readers/user-pattern.ts: a refused pattern is a SourceError, answered from the one code table. */
import t from 'tap';
import { compileUserPattern } from '../../src/readers/user-pattern.js';
import { rejectsCode, rejectsStatus } from '../helpers/problem.js';

t.test('a refused pattern is a bad_parameter naming its parameter (400)', async (t) => {
  await rejectsStatus(t, () => compileUserPattern('(a)\\1'), 400, /^pattern: backreferences.*not supported.*RE2/);
  await rejectsCode(t, () => compileUserPattern('x'.repeat(2000), 'query'), 'bad_parameter', /^query: longer than 1024/);
  const err = await compileUserPattern('(?=a)', 'query').then(() => null, (e: unknown) => e);
  t.match(err, { code: 'bad_parameter', param: 'query' }, 'the parameter named');
});

t.test('a pattern that compiles matches as lib/pattern does', async (t) => {
  const p = await compileUserPattern('oom-kill');
  t.equal(await p.test('OOM-KILL'), true);
  t.same((await p.filter(['a', 'oom-kill b', 'c'], (s) => s)).items, ['oom-kill b']);
});
