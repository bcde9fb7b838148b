/**
 * Following a container's log (src/readers/podlogs/follow.ts): appended lines, P runs
 * across polls and across the backlog, rotation, and a container that writes 10 MiB
 * without a newline between two polls.
 */
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { MAX_LINE_BYTES } from '../../../src/readers/podlogs/cri-log.js';
import { PodLogs } from '../../../src/readers/podlogs/podlogs.js';
import { criTime, LOG_DIR, line, podLogDir, podLogQuery as q, podLogsRoot, T0 } from '../../fixtures/podlogs.js';

const root = podLogsRoot(t, 'podlogs-follow');
const logs = new PodLogs(new HostFs(root));
const dirOf = (name: string) => podLogDir(root, name);

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

t.test('follow: a container that writes 10 MiB without a newline between two polls', async (t) => {
  const dir = dirOf('follow');
  const file = path.join(root, dir, '0.log');
  writeFileSync(file, `${criTime(T0)} stdout F start\n`);
  const logs = new PodLogs(new HostFs(root));
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const it = logs.follow(`${dir}/0.log`, q({ tailLines: 1 }), ac.signal, 20);
  t.equal((await it.next()).value?.message, 'start');
  // containerd splits the endless line into 16 KiB P lines
  const part = `${criTime(T0 + 1)} stdout P ${'w'.repeat(16 * 1024)}\n`;
  appendFileSync(file, `${criTime(T0 + 1)} stdout P HEAD` + part.slice(part.indexOf(' P ') + 3) + part.repeat(640));
  const cut = (await it.next()).value!;
  t.equal(cut.cut, true);
  t.equal(Buffer.byteLength(cut.message), MAX_LINE_BYTES);
  t.ok(cut.message.startsWith('HEADwww'));
  // the run's end, then a corrupt 10 MiB with no newline at all, then a normal line
  appendFileSync(file, `${criTime(T0 + 2)} stdout F end of the run\n`);
  appendFileSync(file, Buffer.alloc(10 * 1024 * 1024, 'q'));
  appendFileSync(file, `\n${criTime(T0 + 3)} stderr F after\n`);
  t.same((await it.next()).value, { time: criTime(T0 + 3), stream: 'stderr', message: 'after' });
  ac.abort();
  t.equal((await it.next()).done, true);
});

t.test('follow: the backlog ends in an unfinished P run and a line still being written', async (t) => {
  const dir = dirOf('follow2');
  const file = path.join(root, dir, '0.log');
  writeFileSync(file, `${criTime(T0)} stdout F one\n${criTime(T0)} stdout P two-a \n${criTime(T0)} stderr F err\n${criTime(T0)} stdout P two-b `);
  const logs = new PodLogs(new HostFs(root));
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const it = logs.follow(`${dir}/0.log`, q({ tailLines: 5 }), ac.signal, 10);
  t.equal((await it.next()).value?.message, 'one');
  t.equal((await it.next()).value?.message, 'err');
  appendFileSync(file, `\n${criTime(T0 + 1)} stdout F two-c\n`);
  t.equal((await it.next()).value?.message, 'two-a two-b two-c', 'the run begun in the backlog is completed by following');
  ac.abort();
});
