import { appendFileSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { HostFs } from '../../../src/sources/hostfs/hostfs.js';
import { parseCriLogLine } from '../../../src/sources/podlogs/cri-log.js';
import { PodLogs, type PodLogQuery } from '../../../src/sources/podlogs/podlogs.js';
import { LOG_CONTAINER_ID, LOG_DIR, line, writePodLogs } from '../../fixtures/podlogs.js';
import { rejectsStatus } from '../../helpers/problem.js';

const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-podlogs-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
writePodLogs(root);
const logs = new PodLogs(new HostFs(root));
const q = (o: Partial<PodLogQuery> = {}): PodLogQuery => ({ tailLines: null, sinceUs: null, stream: 'all', limitBytes: null, previous: false, ...o });

t.test('CRI line format', async (t) => {
  t.same(parseCriLogLine('2026-11-29T17:42:28.926903430Z stdout F hello world'), {
    time: '2026-11-29T17:42:28.926903430Z',
    us: 1795974148926903,
    stream: 'stdout',
    partial: false,
    message: Buffer.from('hello world'),
    cut: false,
  });
  t.same(parseCriLogLine('2026-11-29T17:42:28.9Z stderr P ')?.message, Buffer.alloc(0));
  t.equal(parseCriLogLine('2026-11-29T17:42:28.9Z stderr P ')?.partial, true);
  t.same(parseCriLogLine('2026-11-29T17:42:28.9Z stdout F')?.message, Buffer.alloc(0));
  t.equal(parseCriLogLine('2026-11-29T17:42:28.9Z stdout F:x y')?.partial, false, 'a tag with a suffix');
  t.equal(parseCriLogLine('garbage'), null);
  t.equal(parseCriLogLine('2026-11-29T17:42:28.9Z stdin F x'), null);
  t.equal(parseCriLogLine('2026-11-29T17:42:28.9Z stdout X x'), null);
});

t.test('live file: P parts joined per stream, tail counts logical lines', async (t) => {
  const r = await logs.read(`${LOG_DIR}/1.log`, q({ tailLines: 4 }));
  t.same(
    r.entries.map((e) => [e.stream, e.message]),
    [
      ['stderr', 'interleaved stderr'],
      ['stdout', 'a long line split by the runtime into three parts'],
      ['stdout', ''],
      ['stdout', 'ünïcödé ✓ and a tab\there'],
    ],
  );
  // the newest stderr line could be the F of a P run begun in the file before: one line of it is read to know
  t.same(r.files, [`${LOG_DIR}/1.log.20261129-170330`, `${LOG_DIR}/1.log`], 'the tail did not reach the gzipped file');
  t.equal(r.entries[1]!.time, line(301, 'stdout', 'P', '').split(' ')[0], 'a joined line has its first part\'s time');
});

t.test('the tail reaches back into rotated files, gzipped too', async (t) => {
  const r = await logs.read(`${LOG_DIR}/1.log`, q({ tailLines: 12 }));
  t.equal(r.entries.length, 12);
  t.same(r.entries.slice(0, 4).map((e) => e.message), ['old 3', 'old 4', 'mid 0', 'mid 1']);
  t.equal(r.files.length, 3);
  const all = await logs.read(`${LOG_DIR}/1.log`, q({ tailLines: 100000 }));
  t.equal(all.entries.length, 15);
  const stderr = await logs.read(`${LOG_DIR}/1.log`, q({ tailLines: 3, stream: 'stderr' }));
  t.same(stderr.entries.map((e) => e.message), ['mid 1', 'mid 3', 'interleaved stderr']);
});

t.test('sinceTime, limitBytes, no tail: the live file only', async (t) => {
  const since = Date.UTC(2026, 10, 29, 17, 0, 0) * 1000 + 203 * 1e6;
  const r = await logs.read(`${LOG_DIR}/1.log`, q({ sinceUs: since }));
  t.same(r.entries.slice(0, 2).map((e) => e.message), ['mid 3', 'mid 4']);
  const limited = await logs.read(`${LOG_DIR}/1.log`, q({ limitBytes: 10 }));
  t.same(limited.entries.map((e) => e.message), ['live 0']);
  t.equal(limited.truncated, true);
  t.equal((await logs.read(`${LOG_DIR}/1.log`, q())).entries.length, 5);
});

t.test('runtime down: the container id maps to its file through /var/log/containers', async (t) => {
  const loc = await logs.locateWithoutRuntime(LOG_CONTAINER_ID.slice(0, 6));
  t.same(loc, { containerId: LOG_CONTAINER_ID, logPath: `${LOG_DIR}/1.log`, attempt: 1, via: 'var-log-containers' });
  t.equal(logs.previousPath(loc), `${LOG_DIR}/0.log`);
  t.same((await logs.read(logs.previousPath(loc), q())).entries.map((e) => e.message), ['attempt 0 started', 'attempt 0 dying']);
  await rejectsStatus(t, logs.locateWithoutRuntime('ffff'), 404);
  await rejectsStatus(t, () => logs.previousPath({ ...loc, attempt: 0, logPath: `${LOG_DIR}/0.log` }), 404);
  await rejectsStatus(t, logs.read('/etc/shadow', q()), 400);
  await rejectsStatus(t, logs.read('/var/log/pods/x/../../../etc/passwd.log', q()), 400);
});

t.test('follow: appended lines, partial lines, rotation', async (t) => {
  const ac = new AbortController();
  const live = path.join(root, LOG_DIR, '1.log');
  const it = logs.follow(`${LOG_DIR}/1.log`, q({ tailLines: 1 }), ac.signal, 10);
  t.match((await it.next()).value, { message: 'ünïcödé ✓ and a tab\there' });
  appendFileSync(live, line(400, 'stdout', 'P', 'part one '));
  appendFileSync(live, line(400, 'stdout', 'F', 'part two'));
  t.match((await it.next()).value, { message: 'part one part two' });
  // kubelet rotates: rename, then the runtime reopens a new file
  renameSync(live, `${live}.20261129-171000`);
  writeFileSync(live, line(500, 'stderr', 'F', 'after rotation'));
  t.match((await it.next()).value, { message: 'after rotation', stream: 'stderr' });
  ac.abort();
  t.equal((await it.next()).done, true);
});
