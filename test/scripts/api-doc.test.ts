/**
 * docs/api.md's reference part is rendered from the agent's OpenAPI document
 * (scripts/api-doc.ts); it cannot rot: a route, parameter, bound or error code that
 * changes without `npx tsx scripts/api-doc.ts` fails here. The hand-written prose
 * around the generated part is kept by the generator.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { ERROR_CODES } from '../../src/errors.js';
import { API_MD, apiDocument, BEGIN, END, renderApiDoc, values, withGenerated } from '../../scripts/api-doc.js';

const doc = await apiDocument();
const text = readFileSync(API_MD, 'utf8');

t.test('docs/api.md is what the generator writes from the current OpenAPI document', async (t) => {
  const want = withGenerated(text, renderApiDoc(doc));
  const at = [...want].findIndex((c, i) => c !== text[i]);
  t.ok(want === text, want === text ? 'up to date' : `docs/api.md is out of date from character ${at} (${JSON.stringify(text.slice(at, at + 80))}): run npx tsx scripts/api-doc.ts`);
});

t.test('every route, every parameter with its bounds and every error code is in it', async (t) => {
  const generated = text.slice(text.indexOf(BEGIN), text.indexOf(END));
  for (const path of Object.keys(doc.paths)) t.match(generated, `### GET ${path}\n`, path);
  t.match(generated, /\| `tailLines` \| query \| integer 0 to 100000 \|/);
  t.match(generated, /\| `limitBytes` \| query \| integer 1 to 16777216 \|/);
  for (const c of ERROR_CODES) t.match(generated, `| \`${c}\` |`, c);
});

t.test('the hand-written prose before and after the generated part is kept', async (t) => {
  const before = text.slice(0, text.indexOf(BEGIN));
  const after = text.slice(text.indexOf(END));
  t.match(before, /^# HTTP API \(v1\)/);
  t.match(after, /## Follow streams/);
  t.match(after, /## cgroup values/);
  const again = withGenerated(withGenerated(text, 'other'), renderApiDoc(doc));
  t.equal(again, withGenerated(text, renderApiDoc(doc)), 'rewriting twice keeps the rest as it was');
  t.throws(() => withGenerated('# no markers\n', 'x'), /markers/);
});

t.test('values: what a parameter schema accepts, in words', async (t) => {
  t.equal(values({ type: 'integer', minimum: 0, maximum: 10 }), 'integer 0 to 10');
  t.equal(values({ type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), 'integer, at least 1');
  t.equal(values({ type: 'string', enum: ['a', ''] }), '`a`, (empty)');
  t.equal(values({ type: 'string', maxLength: 8, pattern: '^x$' }), 'string, at most 8 characters; matching `^x$`');
  t.equal(values({ anyOf: [{ type: 'string', maxLength: 4 }, { type: 'array', maxItems: 3, items: { type: 'string' } }] }), 'string, at most 4 characters; repeatable, at most 3 values');
});
