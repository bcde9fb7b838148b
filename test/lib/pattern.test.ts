import t from 'tap';
import { compileUserPattern, PATTERN_LIMITS, PatternRefusal } from '../../src/lib/pattern.js';
import { hasCapitalOutsideEscapes } from '../../src/lib/pattern-syntax.js';

/** the pattern is refused as a bad parameter, with a detail matching `msg` */
async function refused(t: { ok: (v: unknown, m: string) => unknown }, p: string, msg: RegExp): Promise<void> {
  const err = await compileUserPattern(p).then(() => null, (e: unknown) => e);
  t.ok(err instanceof PatternRefusal && err.kind === 'bad_parameter' && err.param === 'pattern' && msg.test(err.message), `${p.slice(0, 40)} → ${msg} (${String(err)})`);
}

const matches = async (p: string, text: string) => (await compileUserPattern(p)).test(text);

t.test('smart case like journalctl: case-insensitive unless a capital letter outside escapes', async (t) => {
  t.equal(await matches('oom-kill', 'OOM-KILL'), true);
  t.equal(await matches('Killed', 'killed process'), false);
  t.equal(await matches('Killed', 'Killed process'), true);
  // capitals that are syntax, not text
  for (const p of ['\\S+ killed', '\\W', '\\D\\d', '\\pL', '\\p{Greek}', '\\x{1F600}|oom', '\\xC3', '(?P<Name>oom)', '(?<Pid>\\d+)']) {
    t.equal(hasCapitalOutsideEscapes(p), false, `${p} has no capital outside escapes`);
  }
  for (const p of ['OOM', 'a[A-Z]', '\\Qa.B\\E', 'É']) t.equal(hasCapitalOutsideEscapes(p), true, `${p} has a capital`);
  t.equal(await matches('\\S+ killed', 'Process KILLED'), true);
  t.equal(await matches('(?P<Name>oom)', 'OOM'), true);
  // the user can still ask explicitly
  t.equal(await matches('(?i)OOM', 'oom'), true);
});

t.test('unicode: code points, case folding beyond ASCII, classes', async (t) => {
  t.equal(await matches('^.$', '😀'), true, '. is one code point, not one UTF-16 unit');
  t.equal(await matches('café', 'CAFÉ'), true, 'É folds to é');
  t.equal(await matches('σ', 'ΟΔΥΣΣΕΥΣ'), true, 'Greek sigma folds');
  t.equal(await matches('Σ', 'σ'), false, 'a capital makes it case-sensitive');
  t.equal(await matches('\\p{Han}+', 'pod 日本 ok'), true);
  t.equal(await matches('^ü$', 'Ü'), true);
});

t.test('RE2 syntax: unsupported constructs are a 400 that names them and says RE2', async (t) => {
  await refused(t, '(a)\\1', /backreferences.*not supported.*RE2/);
  await refused(t, '(?<=pid=)\\d+', /lookbehind.*not supported.*RE2/);
  await refused(t, '(?<!x)y', /lookbehind/);
  await refused(t, 'oom(?=-kill)', /lookahead.*RE2/);
  await refused(t, 'a++', /possessive.*RE2/);
  await refused(t, '(?>a)', /atomic/);
  await refused(t, '(', /missing closing \).*the syntax is RE2/);
  await refused(t, 'a{1001}', /repeat count.*RE2/);
  await refused(t, 'x'.repeat(PATTERN_LIMITS.maxLength + 1), /longer than 1024/);
  // the largest legal program (100k instructions) still compiles, off the event loop
  const big = await compileUserPattern('[a-z]{999}'.repeat(100));
  t.ok(big.programSize > 90_000, `program size ${big.programSize}`);
});

t.test('catastrophic backtracking shapes are linear: (a+)+$ on 100k a', async (t) => {
  const p = await compileUserPattern('(a+)+$');
  const a = 'a'.repeat(100_000);
  const r = await p.filter([a, a + 'b', 'xyz', a], (s) => s);
  // each text is matched over its first 64 KiB only (said in a warning): the cut text of a+'b' ends in a too
  t.same(r.items.map((s) => s.length), [100_000, 100_001, 100_000]);
  t.equal(r.warnings.length, 1);
  t.match(r.warnings[0], /3 item\(s\) longer than 65536 characters were matched over their first 65536 characters only/);
  t.equal(await (await compileUserPattern('(x+x+)+y')).test('x'.repeat(50_000)), false);
  t.equal(await (await compileUserPattern('(.*a){12}z')).test('a'.repeat(5000)), false);
});

t.test('a tail searches from the end and stops at the limit; results keep input order', async (t) => {
  const lines = Array.from({ length: 20_000 }, (_, i) => `line ${i} ${i % 3 === 0 ? 'ERROR' : 'info'}`);
  const p = await compileUserPattern('error');
  const r = await p.filter(lines, (s) => s, { limit: 3, fromEnd: true });
  t.same(r.items, ['line 19992 ERROR', 'line 19995 ERROR', 'line 19998 ERROR']);
  t.equal(r.incomplete, false);
  const all = await p.filter(lines, (s) => s);
  t.equal(all.items.length, 6667);
  t.equal(all.items[0], 'line 0 ERROR');
  t.same((await p.filter(lines, (s) => s, { limit: 0 })).items, []);
  t.same((await p.filter([], (s: string) => s)).items, []);
});

// A pattern and text that defeat re2js's DFA: ~10-40 µs per character in its NFA (see pattern.ts).
const slowPattern = '.*a.{400}q';
const slowText = () => {
  let s = '';
  // pseudo-random (an LCG): a periodic text would let the DFA settle into a few states
  for (let i = 0, x = 12345; i < PATTERN_LIMITS.maxMatchChars; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += x & 0x10000 ? 'a' : 'X';
  }
  return s;
};

t.test('a search that overruns its budget stops with a warning, and the worker is replaced', async (t) => {
  const p = await compileUserPattern(slowPattern);
  const text = slowText();
  const r = await p.filter(Array.from({ length: 50 }, () => text), (s) => s, { budgetMs: 1 });
  t.equal(r.incomplete, true);
  t.match(r.warnings.join('\n'), /the search stopped after 1 ms with \d+ of 50 items searched/);
  // the pool still answers afterwards
  t.equal(await matches('still', 'still works'), true);
});

t.test('an aborted search ends at once and frees its worker', async (t) => {
  const p = await compileUserPattern(slowPattern);
  const text = slowText();
  const ac = new AbortController();
  const pending = p.filter(Array.from({ length: 50 }, () => text), (s) => s, { signal: ac.signal });
  setTimeout(() => ac.abort(), 20);
  const r = await pending;
  t.equal(r.incomplete, true);
  t.same(r.items, []);
  t.equal(await matches('after', 'after abort'), true);
});
