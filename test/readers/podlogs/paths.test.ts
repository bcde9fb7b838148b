/**
 * Locating a container's log and containing every read in the host's /var/log
 * (src/readers/podlogs/paths.ts): the /var/log/containers links with the runtime
 * down, the attempt before, paths out of /var/log, links out of it, a FIFO.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { PodLogs } from '../../../src/readers/podlogs/podlogs.js';
import { criTime, LOG_CONTAINER_ID, LOG_DIR, podLogDir, podLogQuery as q, podLogsRoot, T0 } from '../../fixtures/podlogs.js';
import { rejectsStatus } from '../../helpers/problem.js';

const root = podLogsRoot(t, 'podlogs-paths');
const logs = new PodLogs(new HostFs(root));
const dirOf = (name: string) => podLogDir(root, name);

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

t.test('containment: a directory link out of /var/log, a file link, a FIFO', async (t) => {
  mkdirSync(path.join(root, 'etc/c'), { recursive: true });
  writeFileSync(path.join(root, 'etc/c/0.log'), `${criTime(T0)} stdout F secret\n`);
  writeFileSync(path.join(root, 'etc/shadow.log'), `${criTime(T0)} stdout F secret\n`);
  symlinkSync('/etc', path.join(root, 'var/log/pods/default_evil_0000'));
  const logs = new PodLogs(new HostFs(root));
  await rejectsStatus(t, logs.read('/var/log/pods/default_evil_0000/c/0.log', q({ tailLines: 1 })), 400);
  await rejectsStatus(t, logs.read('/var/log/pods/default_evil_0000/c/0.log', q()), 400);
  const dir = dirOf('link');
  symlinkSync('/etc/shadow.log', path.join(root, dir, '3.log'));
  await rejectsStatus(t, logs.read(`${dir}/3.log`, q({ tailLines: 1 })), 400);
  const ac = new AbortController();
  await rejectsStatus(t, logs.follow(`${dir}/3.log`, q(), ac.signal, 10).next(), 400);
  // a rotated file that is a link out is not listed (readdir: not a regular file); the live one still answers
  writeFileSync(path.join(root, dir, '4.log'), `${criTime(T0)} stdout F mine\n`);
  symlinkSync('/etc/shadow.log', path.join(root, dir, '4.log.20261130-100000'));
  t.same((await logs.read(`${dir}/4.log`, q({ tailLines: 5 }))).entries.map((e) => e.message), ['mine']);
  execFileSync('mkfifo', [path.join(root, dir, '5.log')]);
  await rejectsStatus(t, logs.read(`${dir}/5.log`, q({ tailLines: 1 })), 400);
});
