/**
 * /metrics over a node with bad items (a directory for cpu.stat, a scope that
 * is a symlink to itself, garbage lines in memory.events, /proc/loadavg a link loop):
 * the readable cgroups are exported, the skipped ones counted in
 * nodetruth_scrape_skipped_items{source}, the sources stay up, and promtool stays clean.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import {
  BESTEFFORT_ID,
  BESTEFFORT_UID,
  containerCgroupPath,
  GUARANTEED_ID,
  GUARANTEED_UID,
  realNodeSpec,
  STATIC_ID,
  STATIC_UID,
  tempHostRoot,
} from '../fixtures/node-tree.js';
import { testApp } from '../helpers/app.js';

const host = tempHostRoot(realNodeSpec('systemd'));
t.teardown(host.cleanup);
const cg = (p: string) => path.join(host.root, 'sys/fs/cgroup', p);
const guaranteed = cg(containerCgroupPath('systemd', 'guaranteed', GUARANTEED_UID, GUARANTEED_ID));
rmSync(path.join(guaranteed, 'cpu.stat'));
mkdirSync(path.join(guaranteed, 'cpu.stat'));
const stat = cg(containerCgroupPath('systemd', 'burstable', STATIC_UID, STATIC_ID));
rmSync(stat, { recursive: true });
symlinkSync(path.basename(stat), stat);
writeFileSync(path.join(cg(containerCgroupPath('systemd', 'besteffort', BESTEFFORT_UID, BESTEFFORT_ID)), 'memory.events'), 'low 0\nhigh NaN\noom 3\noom_kill 2\n');
rmSync(path.join(host.root, 'proc/loadavg'));
symlinkSync('loadavg', path.join(host.root, 'proc/loadavg'));

const ta = await testApp(['--host-root', host.root]);
t.teardown(() => ta.close());
await ta.app.listen({ port: 0, host: '127.0.0.1' });
const { port } = ta.app.server.address() as { port: number };
const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

t.test('the skipped items are counted, the rest exported, the sources up', async (t) => {
  const skipped = (source: string) => Number(new RegExp(`^nodetruth_scrape_skipped_items\\{source="${source}"\\} (\\d+)$`, 'm').exec(body)?.[1] ?? NaN);
  t.equal(skipped('cgroups'), 3, 'the EISDIR cgroup, the scope that is a link, the malformed memory.events');
  t.ok(skipped('node') >= 1, 'loadavg, a link loop');
  t.equal(skipped('kubelet'), 0, 'a source that skipped nothing says 0');
  t.match(body, /^nodetruth_scrape_source_up\{source="cgroups"\} 1$/m);
  t.match(body, /^nodetruth_scrape_source_up\{source="node"\} 1$/m);
  t.match(body, new RegExp(`container_oom_events_total\\{[^}]*id="/kubepods.slice/kubepods-besteffort.slice/[^"]*${BESTEFFORT_ID}[^"]*"[^}]*\\} 2`), 'the good lines of memory.events stand (oom_kill 2)');
  t.notMatch(body, new RegExp(`cri-containerd-${GUARANTEED_ID}`), 'no series for the unreadable cgroup');
});

const promtool = '/usr/bin/promtool';
t.test('promtool check metrics is clean', { skip: existsSync(promtool) ? false : 'promtool not installed (apt-get install prometheus)' }, async (t) => {
  let out = '';
  try {
    out = execFileSync(promtool, ['check', 'metrics'], { input: body, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    t.fail(`promtool: ${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
  t.equal(out.trim(), '', 'no lint warnings');
});
