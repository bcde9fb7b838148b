/** One-shot reads (src/readers/podlogs/read.ts) of the pod logs fixture: a live file with P runs, rotated files, a gzipped one. */
import t from 'tap';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { PodLogs } from '../../../src/readers/podlogs/podlogs.js';
import { LOG_DIR, line, podLogQuery as q, podLogsRoot } from '../../fixtures/podlogs.js';

const root = podLogsRoot(t, 'podlogs');
const logs = new PodLogs(new HostFs(root));

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
