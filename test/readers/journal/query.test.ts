import t from 'tap';
import { validateJournalQuery } from '../../../src/readers/journal/query.js';
import { journalctlArgs } from '../../../src/readers/journal/journalctl.js';
import { parseRfc3339Micros, formatMicros } from '../../../src/readers/journal/time.js';
import { isSourceError } from '../../../src/readers/errors.js';

const bad = (t: { fail: (m: string) => unknown; ok: (v: unknown, m: string) => unknown }, input: Parameters<typeof validateJournalQuery>[0], param: string) => {
  try {
    validateJournalQuery(input);
    t.fail(`accepted ${JSON.stringify(input)}`);
  } catch (err) {
    t.ok(isSourceError(err, 'bad_parameter') && err.param === param, `${JSON.stringify(input)} → bad_parameter ${param}`);
  }
};

t.test('kubelet names and limits', async (t) => {
  const q = validateJournalQuery({ query: ['kubelet', 'containerd.service', 'systemd-journald@x:y', '  '], tailLines: 100000, boot: -1 });
  t.match(q, { kind: 'journal', units: ['kubelet', 'containerd.service', 'systemd-journald@x:y'], tailLines: 100000, boot: -1 });
  bad(t, { query: ['a', 'b', 'c', 'd', 'e'] }, 'query');
  bad(t, { query: ['x'.repeat(257)] }, 'query');
  for (const u of ['kube let', '-u x', '--output=json', 'a;b', 'a$b', '..', '.hidden', 'kubelet.', 'a..b', 'ü', 'a\nb', '-kubelet']) {
    bad(t, { query: [u] }, 'query');
  }
  bad(t, { tailLines: 100001 }, 'tailLines');
  bad(t, { tailLines: -1 }, 'tailLines');
  bad(t, { tailLines: 1.5 }, 'tailLines');
  bad(t, { boot: 1 }, 'boot');
  bad(t, { sinceTime: '2026-11-29T17:00:00Z', untilTime: '2026-11-29T16:00:00Z' }, 'untilTime');
  bad(t, { sinceTime: '2026-11-29 17:00:00' }, 'sinceTime');
  bad(t, { sinceTime: '2026-02-30T00:00:00Z' }, 'sinceTime');
  bad(t, { priority: 'loud' }, 'priority');
  bad(t, { priority: '-p 3' }, 'priority');
  bad(t, { pattern: '--output=json' }, 'pattern');
  bad(t, { pattern: '-u x' }, 'pattern');
  bad(t, { pattern: 'a\nb' }, 'pattern');
  bad(t, { pattern: 'x'.repeat(1025) }, 'pattern');
  bad(t, { follow: true, untilTime: '2026-11-29T16:00:00Z' }, 'untilTime');
});

t.test('until is not filled from since (kubelet bug)', async (t) => {
  const q = validateJournalQuery({ sinceTime: '2026-11-29T17:42:28.926903Z' });
  t.match(q, { kind: 'journal', sinceUs: 1795974148926903, untilUs: null });
  if (q.kind !== 'journal') throw new Error();
  const a = journalctlArgs(q);
  t.ok(a.includes('--since=@1795974148.926903'));
  t.notOk(a.some((x) => x.startsWith('--until')));
});

t.test('file queries', async (t) => {
  t.match(validateJournalQuery({ query: ['/var/log/syslog'] }), { kind: 'file', file: 'syslog' });
  t.match(validateJournalQuery({ query: ['pods/ns_name_uid/c/0.log'] }), { kind: 'file', file: 'pods/ns_name_uid/c/0.log' });
  t.match(validateJournalQuery({ query: ['./x/./y'] }), { kind: 'file', file: 'x/y' });
  bad(t, { query: ['../etc/shadow'] }, 'query');
  bad(t, { query: ['/var/log/../../etc/shadow'] }, 'query');
  bad(t, { query: ['a/..'] }, 'query');
  bad(t, { query: ['a\\b'] }, 'query');
  bad(t, { query: ['/'] }, 'query');
  bad(t, { query: ['/var/log/syslog', 'kubelet'] }, 'query');
  bad(t, { query: ['/var/log/a', '/var/log/b'] }, 'query');
  bad(t, { query: ['/var/log/a'], sinceTime: '2026-11-29T16:00:00Z' }, 'sinceTime');
});

t.test('argv: one element per value, never a shell', async (t) => {
  const q = validateJournalQuery({ query: ['kubelet'], pattern: 'a b; rm -rf /', tailLines: 5, priority: 'warning..emerg', boot: 0 });
  if (q.kind !== 'journal') throw new Error();
  t.same(journalctlArgs(q).slice(3), ['--unit=kubelet', '--boot=0', '--priority=warning..emerg', '--grep=a b; rm -rf /', '--lines=5']);
});

t.test('RFC3339 to µs and back', async (t) => {
  t.equal(parseRfc3339Micros('2026-11-29T17:42:28.926903550Z'), 1795974148926903);
  t.equal(parseRfc3339Micros('2026-11-29T18:42:28.9+01:00'), 1795974148900000);
  t.equal(parseRfc3339Micros('2026-11-29T17:42:28Z'), 1795974148000000);
  t.equal(parseRfc3339Micros('yesterday'), null);
  t.equal(formatMicros(1795974148926903), '2026-11-29T17:42:28.926903Z');
  t.equal(formatMicros(1795974148000001), '2026-11-29T17:42:28.000001Z');
});
