/**
 * An aborted /v1/logs request must not leave its journalctl running, and
 * journalctl children are capped. Real journalctl over real journal files: 20,000
 * entries from systemd-journal-remote and a hostile PCRE2 pattern that journalctl
 * takes tens of seconds of CPU to refuse on every entry ((\S+\s?){1,6}[#%]), so each
 * child would run until the 30 s deadline unless the request's end kills it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { JOURNAL_LIMITS } from '../../../src/readers/journal/limits.js';
import { bulkScenario, writeJournal } from '../../fixtures/journal/gen.js';
import { makeJournalHost } from '../../fixtures/journal/host.js';
import { kmsgFixture } from '../../fixtures/kmsg/oom-reports.js';
import { testApp } from '../../helpers/app.js';
import { alive, waitFor } from '../../helpers/pids.js';

const host = await makeJournalHost();
await writeJournal(path.join(host.root, 'var/log/journal'), 'system@bulk', bulkScenario(20_000));
const ta = await testApp(['--host-root', host.root, '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg')]);
await ta.app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(ta.app.server.address() as AddressInfo).port}`;
const journal = ta.deps.journal;
const SLOW = `/v1/logs?pattern=${encodeURIComponent('(\\S+\\s?){1,6}[#%]')}`;
const seen = new Set<number>();
t.teardown(async () => {
  for (const pid of journal.live) process.kill(pid, 'SIGKILL');
  await ta.close();
  host.cleanup();
});

/** start a request; resolves with the status when it answers */
const start = (p: string) => {
  let req!: http.ClientRequest;
  const status = new Promise<{ status: number; body: string }>((resolve) => {
    req = http.get(`${base}${p}`, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve({ status: -1, body: '' }));
  });
  return { req, status };
};
const newPid = async () => {
  t.ok(await waitFor(() => [...journal.live].some((p) => !seen.has(p)), 10_000), 'a journalctl child started');
  const pid = [...journal.live].find((p) => !seen.has(p))!;
  seen.add(pid);
  return pid;
};

t.test('20 aborted requests leave no journalctl behind', async (t) => {
  const pids: number[] = [];
  for (let i = 0; i < 20; i++) {
    const r = start(SLOW);
    const pid = await newPid();
    t.ok(alive(pid), `child ${pid} running while its request is`);
    r.req.destroy(); // the client goes away
    pids.push(pid);
  }
  t.ok(await waitFor(() => journal.live.size === 0 && !pids.some(alive)), 'children killed and reaped');
  t.equal(journal.live.size, 0, 'JournalSource.live is empty');
  t.same(pids.filter(alive), [], 'kill -0 fails for every one');
});

t.test(`at most ${JOURNAL_LIMITS.maxChildren} journalctl children at once: 429 beyond, slots come back`, async (t) => {
  const running = Array.from({ length: JOURNAL_LIMITS.maxChildren }, () => start(SLOW));
  for (let i = 0; i < running.length; i++) await newPid();
  const over = await start(SLOW).status;
  t.equal(over.status, 429, over.body);
  t.match(JSON.parse(over.body), { status: 429, detail: /at most 4 journal queries/ });
  t.equal(journal.live.size, JOURNAL_LIMITS.maxChildren, 'no child started for the refused request');
  for (const r of running) r.req.destroy();
  t.ok(await waitFor(() => journal.live.size === 0), 'all reaped');
  const after = await start('/v1/logs?query=kubelet&tailLines=2').status;
  t.equal(after.status, 200, 'a slot is free again');
  t.equal(journal.live.size, 0);
});

t.test('/v1/oom and /v1/kernel pass the request signal too (a normal answer leaves no child)', async (t) => {
  t.equal((await start('/v1/oom').status).status, 200);
  t.equal((await start('/v1/kernel?tailLines=1').status).status, 200);
  t.ok(await waitFor(() => journal.live.size === 0));
});
