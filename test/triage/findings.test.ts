/**
 * The findings catalogue (src/rules/findings.ts) against the rule table and
 * docs/triage.md. That each emitted finding matches its entry, and that each entry is
 * emitted by a test, is checked over every snapshot of test/triage/rules.test.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import t from 'tap';
import { FINDINGS, idsOf, type RuleName } from '../../src/triage/findings.js';
import { RULES } from '../../src/triage/rules/index.js';
import { KUBELET_JOURNAL_PATTERNS } from '../../src/rules/journal-patterns.js';
import { KERNEL_PROBLEMS } from '../../src/rules/kernel-problems.js';

t.test('one entry per id; every rule emits exactly its entries; every entry has its rule', async (t) => {
  const ids = FINDINGS.map((k) => k.id);
  t.same(ids.filter((id, i) => ids.indexOf(id) !== i), [], 'no id twice');
  const names = RULES.map((r) => r.name);
  t.same(names.filter((n, i) => names.indexOf(n) !== i), [], 'no rule name twice');
  for (const r of RULES) {
    t.ok(r.ids.length > 0, `${r.name} has catalogue entries`);
    t.same(r.ids, idsOf(r.name), `${r.name}'s ids are its entries`);
  }
  const ruled = new Set<string>([...names, 'report']);
  t.same(FINDINGS.filter((k) => !ruled.has(k.rule)).map((k) => k.id), [], 'every entry names a rule in RULES (or the report)');
  for (const k of FINDINGS) t.ok(k.severities.length > 0 && k.title && k.means && k.todo, `${k.id} says what it means and what to do`);
});

t.test("kubelet journal and kernel findings are journal-patterns.ts's and kernel-problems.ts's rows, one severity each", async (t) => {
  const journal = FINDINGS.filter((k) => k.rule === ('journal' satisfies RuleName));
  t.same(journal.map((k) => k.id), KUBELET_JOURNAL_PATTERNS.map((p) => p.id));
  const kernel = FINDINGS.filter((k) => k.rule === ('kernel' satisfies RuleName));
  t.same(kernel.map((k) => k.id), KERNEL_PROBLEMS.map((p) => p.id));
  for (const k of [...journal, ...kernel]) t.equal(k.severities.length, 1, `${k.id}: the rule reports the one catalogued severity`);
});

// docs/triage.md holds this table between the markers; UPDATE_README=1 writes it
const BEGIN = '<!-- findings: generated from src/rules/findings.ts, checked by test/triage/findings.test.ts (UPDATE_README=1 writes it) -->';
const END = '<!-- end of findings -->';
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const table = [
  '| id | severity | what it means | what to do |',
  '|---|---|---|---|',
  ...FINDINGS.map((k) => `| \`${k.id}\` | ${k.severities.join(', ')} | ${cell(k.means)} | ${cell(k.todo)} |`),
].join('\n');

t.test('docs/triage.md lists every finding with what it means and what to do', async (t) => {
  const path = new URL('../../docs/triage.md', import.meta.url);
  const readme = readFileSync(path, 'utf8');
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END, start);
  t.ok(start >= 0 && end > start, 'the markers are in docs/triage.md');
  const section = `${BEGIN}\n${table}\n${END}`;
  if (process.env.UPDATE_README === '1' && start >= 0 && end > start) {
    writeFileSync(path, readme.slice(0, start) + section + readme.slice(end + END.length));
    t.comment('docs/triage.md: findings table written');
    return;
  }
  t.equal(readme.slice(start, end + END.length), section, 'docs/triage.md matches the catalogue (run with UPDATE_README=1 to write it)');
});
