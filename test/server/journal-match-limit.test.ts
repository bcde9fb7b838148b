/**
 * journalctl 252 (PCRE2 --grep) stops with exit 1 and "Pattern matching failed:
 * match limit exceeded" on a pattern such as `(.|..)*[#%]$` over a long message. That is
 * no failure of the request and no silent empty answer: /v1/logs answers 200 with the
 * records journalctl printed before it stopped and the reason in `warnings`.
 * Real journalctl over real journal files (systemd-journal-remote), through the server.
 */
import t from 'tap';
import { makeJournalHost } from '../fixtures/journal/host.js';
import { testApp } from '../helpers/app.js';

const host = await makeJournalHost();
t.teardown(host.cleanup);
const ta = await testApp(['--host-root', host.root]);
t.teardown(() => ta.close());

t.test('PCRE2 match limit: 200, the reason in warnings', async (t) => {
  const r = await ta.app.inject(`/v1/logs?pattern=${encodeURIComponent('(.|..)*[#%]$')}`);
  t.equal(r.statusCode, 200, r.body.slice(0, 300));
  const b = r.json<{ records: unknown[]; warnings: string[] }>();
  t.ok(Array.isArray(b.records), 'records (those printed before the limit) stand');
  t.ok(b.warnings.some((w) => /match limit exceeded/.test(w)), b.warnings.join('\n'));
});

t.test('a pattern that simply matches nothing: 200, no records, no warning', async (t) => {
  const r = await ta.app.inject(`/v1/logs?pattern=${encodeURIComponent('no-such-text-anywhere-0f1e2d')}`);
  t.equal(r.statusCode, 200);
  t.same(r.json<{ records: unknown[]; warnings: string[] }>().records, []);
  t.same(r.json<{ warnings: string[] }>().warnings, []);
});
