/**
 * One unreadable cgroup must not empty /v1/oom's memoryEvents (nor
 * /v1/cgroups, /metrics or /v1/triage, which walk the same tree).
 *
 * The tests run as root, which EACCES does not stop (CAP_DAC_OVERRIDE), so the
 * unreadable cgroups are made of what stops root too:
 * - a symlink loop in place of memory.events (memory.events -> memory.events: ELOOP);
 * - a directory in place of memory.events and of memory.stat (read(2) gives EISDIR);
 * - a container cgroup that vanishes between the walk and the read (removed after walkKubepods).
 */
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { walkKubepods } from '../../../src/readers/cgroup/cgroups.js';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { readMemoryEvents } from '../../../src/readers/oom/memory-events.js';
import {
  BESTEFFORT_ID,
  BESTEFFORT_UID,
  containerCgroupPath,
  GUARANTEED_UID,
  OOM_CHILD_ID,
  POD_UID,
  podCgroupPath,
  realNodeSpec,
  SPIN_ID,
  tempHostRoot,
} from '../../fixtures/node-tree.js';
import { testApp } from '../../helpers/app.js';

const host = tempHostRoot(realNodeSpec('systemd'));
t.teardown(host.cleanup);
const cg = (p: string) => path.join(host.root, 'sys/fs/cgroup', p);
const loop = cg(containerCgroupPath('systemd', 'burstable', POD_UID, OOM_CHILD_ID));
rmSync(path.join(loop, 'memory.events'));
symlinkSync('memory.events', path.join(loop, 'memory.events'));
const isDir = cg(podCgroupPath('systemd', 'guaranteed', GUARANTEED_UID));
rmSync(path.join(isDir, 'memory.events'));
mkdirSync(path.join(isDir, 'memory.events'));
const statDir = cg(containerCgroupPath('systemd', 'burstable', POD_UID, SPIN_ID));
rmSync(path.join(statDir, 'memory.stat'));
mkdirSync(path.join(statDir, 'memory.stat'));

const ta = await testApp(['--host-root', host.root]);
t.teardown(() => ta.close());

t.test('/v1/oom: the bad cgroups are skipped and named, the rest stands', async (t) => {
  const r = await ta.app.inject('/v1/oom');
  t.equal(r.statusCode, 200, r.body);
  const b = r.json<{ memoryEvents: Array<{ path: string; podUid: string; containerId: string | null }>; warnings: string[] }>();
  t.ok(b.memoryEvents.length >= 3, `${b.memoryEvents.length} cgroups listed`);
  t.ok(b.memoryEvents.some((e) => e.podUid === POD_UID && e.containerId === null), 'the pod slice of the bad container is there');
  t.notOk(b.memoryEvents.some((e) => e.containerId === OOM_CHILD_ID), 'the symlink loop is not');
  t.ok(b.warnings.some((w) => w.includes(OOM_CHILD_ID) && /ELOOP/.test(w)), 'named: ELOOP');
  t.ok(b.warnings.some((w) => w.includes(GUARANTEED_UID.replace(/-/g, '_')) && /EISDIR/.test(w)), 'named: EISDIR');
});

t.test('a cgroup that vanished between the walk and the read', async (t) => {
  const fs = new HostFs(host.root);
  const found = await walkKubepods(fs);
  const gone = found.find((c) => c.containerId === BESTEFFORT_ID)!;
  const saved = cg(containerCgroupPath('systemd', 'besteffort', BESTEFFORT_UID, BESTEFFORT_ID));
  rmSync(saved, { recursive: true });
  const warnings: string[] = [];
  const ev = await readMemoryEvents(fs, found, warnings);
  t.ok(ev.length >= 3);
  t.notOk(ev.some((e) => e.path === gone.path));
  t.ok(warnings.some((w) => w.includes(gone.path) && /vanished/.test(w)), warnings.join('\n'));
});

t.test('/v1/cgroups, /metrics and /v1/triage still answer over the same tree', async (t) => {
  const c = await ta.app.inject('/v1/cgroups');
  t.equal(c.statusCode, 200, c.body.slice(0, 300));
  const items = c.json<{ items: Array<{ containerId: string | null }> }>().items;
  t.ok(items.length >= 3, `${items.length} cgroups`);
  t.notOk(items.some((i) => i.containerId === SPIN_ID), 'the cgroup with a directory for memory.stat is skipped');
  const m = await ta.app.inject('/metrics');
  t.equal(m.statusCode, 200);
  t.match(m.body, /container_memory_working_set_bytes\{/);
  const tr = await ta.app.inject('/v1/triage');
  t.equal(tr.statusCode, 200, tr.body.slice(0, 300));
  // the report names the skipped cgroups in `warnings`; the source itself answered
  t.equal(tr.json<{ sources: Record<string, { ok: boolean }> }>().sources.cgroups?.ok, true, 'the cgroup source did not fail');
});
