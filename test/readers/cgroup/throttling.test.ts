/** Throttling over a window: two cpu.stat samples (the captured ones, 3 s apart). */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { measureThrottling } from '../../../src/readers/cgroup/throttling.js';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { CAPTURED, containerCgroupPath, GUARANTEED_ID, OOM_CHILD_ID, POD_UID, realNode, SPIN_ID } from '../../fixtures/node-tree.js';

const fx = realNode('systemd');
t.teardown(fx.cleanup);
const fs = new HostFs(fx.root);
const spinStat = path.join(fx.root, 'sys/fs/cgroup', containerCgroupPath('systemd', 'burstable', POD_UID, SPIN_ID), 'cpu.stat');

/** A clock that advances exactly by what the fake sleep waits. */
function fakeTime(onSleep: () => void) {
  let now = 0;
  return {
    now: () => now,
    sleep: async (ms: number) => {
      onSleep();
      now += ms;
    },
  };
}

t.test('the spinning container ranks first: 31 of 31 periods throttled, 2.78 s throttled in 3 s', async (t) => {
  writeFileSync(spinStat, CAPTURED.spin.cpuStat);
  const clock = fakeTime(() => writeFileSync(spinStat, CAPTURED.spin.cpuStatLater));
  const r = await measureThrottling(fs, 3000, clock);
  t.equal(r.windowMs, 3000);
  const top = r.entries[0]!;
  t.equal(top.containerId, SPIN_ID);
  t.match(top, {
    kind: 'container',
    podUid: POD_UID,
    qos: 'burstable',
    periods: 31,
    throttledPeriods: 31,
    throttledShare: 1,
    throttledSeconds: 2.782689,
    cpuMax: { quotaCores: 0.1 },
  });
  t.equal(top.usageCores, 0.0998, '(2123735 - 1824308) us over 3 s: the 0.1-core quota, used up');
  t.notOk('dir' in top, 'no resolved paths in the output');
  const idle = r.entries.filter((e) => e.containerId !== SPIN_ID);
  t.ok(idle.every((e) => e.periods === 0 && e.throttledShare === null && e.throttledSeconds === 0), 'nothing else moved');
  t.ok(idle.some((e) => e.containerId === GUARANTEED_ID));
});

t.test('containers vanishing during the window are dropped; pod filter', async (t) => {
  writeFileSync(spinStat, CAPTURED.spin.cpuStat);
  const doomed = path.join(fx.root, 'sys/fs/cgroup', containerCgroupPath('systemd', 'burstable', POD_UID, OOM_CHILD_ID));
  const clock = fakeTime(() => rmSync(doomed, { recursive: true }));
  const r = await measureThrottling(fs, 1000, { ...clock, podUid: POD_UID });
  t.same(r.entries.map((e) => e.containerId).sort(), [SPIN_ID, '0f135d9cd1bfd0219483ba9e027a1b6b30abd2215a5f219fc338d7485297d56a'].sort());
});

t.test('the real clock and sleep, and cancellation', async (t) => {
  const r = await measureThrottling(fs, 50, { podUid: POD_UID });
  t.ok(r.windowMs >= 50, `measured ${r.windowMs} ms`);
  const ac = new AbortController();
  const p = measureThrottling(fs, 10_000, { signal: ac.signal });
  setTimeout(() => ac.abort(), 20);
  await t.rejects(p, { name: 'AbortError' });
});
