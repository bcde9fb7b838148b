/**
 * The kubepods walk and per-cgroup reads, on generated trees laid out as the
 * captured systemd + containerd node, for both kubelet cgroup drivers.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { CgroupDriver } from '../../../src/model/cgroup.js';
import { detectMode, walkKubepods, type FoundCgroup } from '../../../src/readers/cgroup/cgroups.js';
import { readMany } from '../../../src/readers/cgroup/stats.js';
import { readPids } from '../../../src/view/container-processes.js';
import { TurnQueue } from '../../../src/lib/turns.js';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import {
  armCanaries,
  BESTEFFORT_ID,
  BESTEFFORT_UID,
  CANARY,
  ESCAPE_ID,
  GUARANTEED_ID,
  GUARANTEED_SANDBOX,
  GUARANTEED_UID,
  NOCTRL_ID,
  NOCTRL_UID,
  OOM_CHILD_ID,
  OOM_MAIN_ID,
  POD_UID,
  realNode,
  SANDBOX_ID,
  SPIN_ID,
  STATIC_ID,
  STATIC_UID,
  syntheticNodeSpec,
  tempHostRoot,
} from '../../fixtures/node-tree.js';

for (const driver of ['systemd', 'cgroupfs'] as CgroupDriver[]) {
  t.test(`${driver} driver`, async (t) => {
    const fx = realNode(driver);
    t.teardown(fx.cleanup);
    const touched = armCanaries(fx.canaries);
    const fs = new HostFs(fx.root);

    t.test('mode: cgroup v2 with this driver', async (t) => {
      t.match(await detectMode(fs), { version: 'v2', drivers: [driver], reason: null });
    });

    const all = await walkKubepods(fs);

    t.test('every pod and container, all three QoS classes, static pod UID, no dead or escaping cgroup', async (t) => {
      const pods = all.filter((c) => c.kind === 'pod');
      t.same(
        pods.map((p) => [p.podUid, p.qos]).sort(),
        [
          [BESTEFFORT_UID, 'besteffort'],
          [GUARANTEED_UID, 'guaranteed'],
          [NOCTRL_UID, 'besteffort'],
          [POD_UID, 'burstable'],
          [STATIC_UID, 'burstable'],
        ].sort(),
      );
      const ids = all.filter((c) => c.kind === 'container').map((c) => c.containerId);
      t.same(ids.sort(), [BESTEFFORT_ID, GUARANTEED_ID, GUARANTEED_SANDBOX, NOCTRL_ID, OOM_CHILD_ID, SANDBOX_ID, SPIN_ID, STATIC_ID].sort());
      t.notOk(ids.includes(OOM_MAIN_ID), 'the OOM-killed container has no cgroup any more');
      t.notOk(ids.includes(ESCAPE_ID), 'a symlinked "scope" is not followed');
      // every container comes after its pod
      all.forEach((c, i) => {
        if (c.kind === 'container') t.ok(all.slice(0, i).some((p) => p.kind === 'pod' && p.podUid === c.podUid), `${c.containerId} after its pod`);
      });
    });

    t.test('paths, as /proc/<pid>/cgroup prints them', async (t) => {
      const spin = all.find((c) => c.containerId === SPIN_ID)!;
      const uid = POD_UID.replace(/-/g, '_');
      t.equal(
        spin.path,
        driver === 'systemd'
          ? `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid}.slice/cri-containerd-${SPIN_ID}.scope`
          : `/kubepods/burstable/pod${POD_UID}/${SPIN_ID}`,
      );
      t.equal(spin.runtime, driver === 'systemd' ? 'cri-containerd' : null);
      t.equal(spin.dir.hostPath, `/sys/fs/cgroup${spin.path}`);
      const g = all.find((c) => c.containerId === GUARANTEED_ID)!;
      t.equal(g.path, driver === 'systemd' ? `/kubepods.slice/kubepods-pod${GUARANTEED_UID.replace(/-/g, '_')}.slice/cri-containerd-${GUARANTEED_ID}.scope` : `/kubepods/pod${GUARANTEED_UID}/${GUARANTEED_ID}`);
      t.equal(g.qos, 'guaranteed');
    });

    const records = await readMany(fs, all);
    const get = (id: string) => records.find((r) => r.containerId === id)!.stats;
    const pod = (uid: string) => records.find((r) => r.kind === 'pod' && r.podUid === uid)!.stats;

    t.test('throttled container: captured cpu.stat, cpu.max and PSI', async (t) => {
      const s = get(SPIN_ID);
      t.match(s.cpu, { usageUsec: 1824308, nrPeriods: 169, nrThrottled: 168, throttledUsec: 14961853, max: { quotaCores: 0.1, quotaUsec: 10000, periodUsec: 100000 }, weight: 4 });
      t.same(s.pressure.cpu?.some, { avg10: 47.58, avg60: 13.58, avg300: 3.09, total: 10277915 });
      t.equal(s.memory.max, 67108864);
      t.equal(s.memory.high, 'max', "memory.high's default, as in every cgroup with the memory controller");
      t.equal(s.memory.workingSet, 0, 'inactive_file above usage: floored at 0');
      t.equal(s.pids.max, 'max');
    });

    t.test('container whose child was OOM-killed keeps running with its counters', async (t) => {
      const s = get(OOM_CHILD_ID);
      t.same(s.memory.events, { low: 0, high: 0, max: 32, oom: 1, oomKill: 1, oomGroupKill: 0 });
      t.equal(s.memory.current, 184320);
      t.equal(s.memory.peak, 33554432);
      t.equal(s.memory.max, 33554432);
      t.equal(s.memory.workingSet, 184320 - 8192);
      t.same(s.io, [{ device: '254:0', rbytes: 1458176, wbytes: 0, rios: 37, wios: 0, dbytes: 0, dios: 0 }]);
      t.equal(s.pressure.memory?.some.total, 7522);
    });

    t.test('dead container: the pod cgroup kept the OOM kill (hierarchical memory.events)', async (t) => {
      const s = pod(POD_UID);
      t.same(s.memory.events, { low: 0, high: 0, max: 50, oom: 2, oomKill: 2, oomGroupKill: 0 });
      t.equal(s.memory.eventsLocal?.oomKill, 0);
      t.equal(s.memory.max, 'max');
      t.equal(s.cpu.usageUsec, 3365212);
      t.same(s.pressure.cpu?.full, { avg10: 59.74, avg60: 18.28, avg300: 4.24, total: 13962127 });
    });

    t.test('guaranteed pod: quota and limit at pod level', async (t) => {
      t.match(pod(GUARANTEED_UID).cpu.max, { quotaCores: 0.5 });
      t.equal(pod(GUARANTEED_UID).memory.max, 268435456);
      t.equal(get(GUARANTEED_ID).pids.max, 1024);
    });

    t.test('missing controllers: nulls, not errors', async (t) => {
      const s = get(NOCTRL_ID);
      t.equal(s.cpu.usageUsec, 5555);
      t.equal(s.cpu.nrPeriods, null);
      t.equal(s.cpu.max, null);
      t.equal(s.cpu.weight, null);
      t.equal(s.memory.current, null);
      t.equal(s.memory.max, null);
      t.equal(s.memory.high, null);
      t.equal(s.memory.events, null);
      t.equal(s.pids.current, null);
      t.equal(s.pids.max, null);
      t.equal(s.io, null);
      t.ok(s.pressure.memory, 'PSI files are core files: still there');
    });

    t.test('a memory.stat that is a symlink out of the root reads as absent', async (t) => {
      const s = get(BESTEFFORT_ID);
      t.equal(s.memory.anon, null);
      t.equal(s.memory.current, 8000000);
      t.equal(s.memory.workingSet, 8000000);
      t.notMatch(JSON.stringify(records), /777777777|CANARY/);
    });

    t.test('cgroup.procs', async (t) => {
      t.same(await readPids(fs, all.find((c) => c.containerId === SANDBOX_ID)!), { ok: true, pids: [867], bad: 0 });
      t.same(await readPids(fs, all.find((c) => c.containerId === BESTEFFORT_ID)!), { ok: true, pids: [], bad: 0 });
    });

    t.test('podUid and podsOnly filters', async (t) => {
      const one = await walkKubepods(fs, { podUid: POD_UID });
      t.equal(one[0]?.kind, 'pod');
      t.same(one.map((c) => c.containerId ?? '').sort(), ['', SANDBOX_ID, OOM_CHILD_ID, SPIN_ID].sort());
      const pods = await walkKubepods(fs, { podsOnly: true });
      t.equal(pods.length, 5);
      t.ok(pods.every((p) => p.kind === 'pod'));
    });

    t.test('nothing outside the root was read', async (t) => {
      t.same(touched(), []);
      t.equal(readFileSync(fx.canaries[0]!, 'utf8').includes(CANARY), true, 'canary still in place');
    });
  });
}

t.test('cgroups vanishing between the walk and the read are skipped', async (t) => {
  const fx = realNode('systemd');
  t.teardown(fx.cleanup);
  const fs = new HostFs(fx.root);
  const all = await walkKubepods(fs);
  const spin = all.find((c) => c.containerId === SPIN_ID)!;
  rmSync(spin.dir.realPath, { recursive: true });
  t.same(await readMany(fs, [spin]), [], 'gone: no record');
  const records = await readMany(fs, all);
  t.equal(records.length, all.length - 1);
  t.notOk(records.some((r) => r.containerId === SPIN_ID));
  t.same(await readPids(fs, spin), { ok: false, gone: true });
});

t.test('a cgroup without cpu.stat but with cgroup.controllers is kept, all nulls', async (t) => {
  const fx = realNode('systemd');
  t.teardown(fx.cleanup);
  const fs = new HostFs(fx.root);
  const real = path.join(fx.root, 'sys/fs/cgroup/kubepods.slice/odd');
  mkdirSync(real);
  writeFileSync(path.join(real, 'cgroup.controllers'), '\n');
  const [odd] = await readMany(fs, [{ path: '/kubepods.slice/odd', dir: await fs.dir('/sys/fs/cgroup/kubepods.slice/odd') } as FoundCgroup]);
  const s = odd?.stats;
  t.equal(s?.cpu.usageUsec, null);
  t.equal(s?.memory.current, null);
  t.equal(s?.io, null);
});

t.test('mode detection: v1, hybrid, nothing; and this machine', async (t) => {
  const base = mkdtempSync(path.join(tmpdir(), 'nodetruth-mode-'));
  t.teardown(() => rmSync(base, { recursive: true, force: true }));
  const v1 = path.join(base, 'v1');
  for (const c of ['memory', 'cpu,cpuacct', 'pids', 'systemd/kubepods.slice']) mkdirSync(path.join(v1, 'sys/fs/cgroup', c), { recursive: true });
  const m1 = await detectMode(new HostFs(v1));
  t.match(m1, { version: 'v1', reason: /cgroup v1: \/sys\/fs\/cgroup is .* nodetruth reads cgroup v2 only/ });
  const hybrid = path.join(base, 'hybrid');
  for (const c of ['memory', 'cpu', 'unified']) mkdirSync(path.join(hybrid, 'sys/fs/cgroup', c), { recursive: true });
  writeFileSync(path.join(hybrid, 'sys/fs/cgroup/unified/cgroup.controllers'), '\n');
  t.match(await detectMode(new HostFs(hybrid)), { version: 'hybrid', reason: /hybrid cgroup hierarchy/ });
  const none = path.join(base, 'none');
  mkdirSync(none);
  t.match(await detectMode(new HostFs(none)), { version: 'unknown', fsType: null, reason: /not there/ });
  mkdirSync(path.join(none, 'sys/fs/cgroup'), { recursive: true });
  t.match(await detectMode(new HostFs(none)), { version: 'unknown', reason: /neither/ });
  t.same(await walkKubepods(new HostFs(none)), [], 'no kubepods: no cgroups');

  // This machine: compare with what its mount table says.
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8');
  const top = mounts.split('\n').find((l) => l.split(' ')[4] === '/sys/fs/cgroup');
  const fstype = top?.split(' - ')[1]?.split(' ')[0];
  const expected = fstype === 'cgroup2' ? 'v2' : / \/sys\/fs\/cgroup\/unified .* - cgroup2 /.test(mounts) ? 'hybrid' : fstype === 'tmpfs' ? 'v1' : 'unknown';
  const real = await detectMode(new HostFs('/'));
  t.equal(real.version, expected, `this machine's /sys/fs/cgroup is ${fstype}`);
  if (expected === 'v2') t.equal(real.fsType, 'cgroup2fs');
  if (expected === 'hybrid' || expected === 'v1') t.equal(real.fsType, 'tmpfs');
});

t.test('synthetic node: counts scale and ids are distinct', async (t) => {
  for (const driver of ['systemd', 'cgroupfs'] as CgroupDriver[]) {
    const node = tempHostRoot(syntheticNodeSpec({ pods: 30, containersPerPod: 3, driver }));
    t.teardown(node.cleanup);
    const fs = new HostFs(node.root);
    const all = await walkKubepods(fs);
    t.equal(all.filter((c) => c.kind === 'pod').length, 30);
    t.equal(all.filter((c) => c.kind === 'container').length, 120, '3 containers + 1 sandbox per pod');
    t.equal(new Set(all.map((c) => c.containerId ?? c.podUid)).size, 150);
    const recs = await readMany(fs, all, 4);
    t.equal(recs.length, 150);
    t.equal(recs.filter((r) => r.kind === 'container' && (r.stats.cpu.nrThrottled ?? 0) > 0).length, 15, 'pods 0,7,14,21,28 throttle their 3 containers');
  }
});

t.test('a long read yields between batches, and two reads at once take turns', async (t) => {
  const node = tempHostRoot(syntheticNodeSpec({ pods: 30, containersPerPod: 3, driver: 'systemd' }));
  t.teardown(node.cleanup);
  const fs = new HostFs(node.root);
  const all = await walkKubepods(fs);
  t.equal(all.length, 150);
  let pauses = 0;
  const recs = await readMany(fs, all, 8, undefined, undefined, async () => pauses++);
  t.equal(recs.length, 150);
  t.ok(pauses >= Math.ceil(150 / 8) - 1, `${pauses} yields for 150 cgroups in batches of at most 8`);

  // lib/turns' queue with no budget (one slice a turn): two reads at once, counted in turns of the loop
  let turns = 0;
  let on = true;
  const tick = () => {
    if (!on) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  const queue = new TurnQueue(0);
  const [a, b] = await Promise.all([readMany(fs, all, 8, undefined, undefined, queue.next), readMany(fs, all, 8, undefined, undefined, queue.next)]);
  t.equal((await readMany(fs, all, 8)).length, 150, 'the default yield (a plain setImmediate) reads them all too');
  on = false;
  t.equal(a.length + b.length, 300);
  // each read yields >= 18 times; taking turns, their 36+ slices need as many turns of the loop
  t.ok(turns >= 2 * (Math.ceil(150 / 8) - 1), `${turns} turns for two reads of 19 slices each`);
});
