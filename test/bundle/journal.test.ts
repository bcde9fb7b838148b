/**
 * The capture's journal section runs through the agent's one journalctl runner
 * (JournalSource): its child is counted in JournalSource.live while it runs, and a
 * capture that stops (its caller gone) leaves no journalctl behind. The stand-in
 * journalctl prints one export entry for the capture's whole-unit export, then
 * hangs; the routes' own queries (--output-fields) get an empty journal at once.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { captureBundle } from '../../src/bundle/capture.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { testApp } from '../helpers/app.js';
import { alive, waitFor } from '../helpers/pids.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-bundle-journal-'));
const pidFile = path.join(dir, 'pid');
const jctl = path.join(dir, 'journalctl');
writeFileSync(
  jctl,
  `#!/bin/sh
case "$*" in *--output-fields*) exit 0;; esac
echo $$ > ${pidFile}
printf '_SYSTEMD_UNIT=kubelet.service\\nMESSAGE=hello\\n\\n'
exec sleep 600
`,
);
chmodSync(jctl, 0o755);
t.teardown(() => rmSync(dir, { recursive: true, force: true }));


t.test('a stopped capture leaves no journalctl: the one runner counts it and reaps it', async (t) => {
  const a = await testApp(['--host-root', dir, '--journalctl', jctl, '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg'), '--kubelet-healthz', 'http://127.0.0.1:1/healthz']);
  t.teardown(() => a.close());
  const journal = a.deps.journal;
  const ac = new AbortController();
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  const capture = captureBundle({ app: a.app, deps: a.deps, throttlingWindow: '1s', signal: ac.signal }, sink);
  capture.catch(() => {});
  t.ok(await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n')), 'the export started');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  t.ok(await waitFor(() => journal.live.has(pid), 2000), `the export (${pid}) runs as a child of the journal runner`);
  t.ok(alive(pid), `journalctl ${pid} runs while the capture does`);
  ac.abort(new Error('client gone'));
  await t.rejects(capture, 'the capture ends with its caller');
  t.ok(await waitFor(() => journal.live.size === 0 && !alive(pid)), 'killed and reaped');
  t.equal(journal.live.size, 0, 'JournalSource.live is empty');
  t.notOk(alive(pid), 'kill -0 fails');
});
