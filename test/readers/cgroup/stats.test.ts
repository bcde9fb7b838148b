/**
 * Inside one reading each cgroup's files are read at most once: a later answer of the same
 * reading (a scrape's few files, then every file for /v1/cgroups) reads only the files not
 * read yet, and sees what the reading read; outside a reading every call reads. The node
 * changes between the calls (memory.current rewritten): what an answer shows says which.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { walkKubepods } from '../../../src/readers/cgroup/cgroups.js';
import { readMany, type StatFile } from '../../../src/readers/cgroup/stats.js';
import { HostFs } from '../../../src/readers/hostfs/hostfs.js';
import { Reading } from '../../../src/reading.js';
import { realNode, SPIN_ID } from '../../fixtures/node-tree.js';

const FEW: StatFile[] = ['memory.current', 'cpu.stat'];

t.test('one reading reads each cgroup file once; a wider read adds only the files not read', async (t) => {
  const fx = realNode('systemd');
  t.teardown(fx.cleanup);
  const fs = new HostFs(fx.root);
  const all = await walkKubepods(fs);
  const spin = all.find((c) => c.containerId === SPIN_ID)!;
  const current = path.join(fx.root, spin.dir.hostPath, 'memory.current');
  writeFileSync(current, '1000\n');

  const reading = new Reading();
  const few = await reading.run(() => readMany(fs, all, undefined, FEW));
  const spinFew = few.find((r) => r.containerId === SPIN_ID)!.stats;
  t.equal(spinFew.memory.current, 1000);
  t.equal(spinFew.pids.current, null, 'a file not asked for is not read');

  writeFileSync(current, '2000\n'); // the node changes within the reading
  const every = await reading.run(() => readMany(fs, all));
  const spinAll = every.find((r) => r.containerId === SPIN_ID)!.stats;
  t.equal(spinAll.memory.current, 1000, 'the reading read memory.current once');
  t.not(spinAll.pids.current, null, 'the files the first read left out are read now');
  t.equal(spinFew.pids.current, null, 'the first answer is left as it was');
  t.equal(every.length, few.length);

  const again = await reading.run(() => readMany(fs, all, undefined, FEW));
  t.equal(again.find((r) => r.containerId === SPIN_ID)!.stats.memory.current, 1000);

  // a new reading, and no reading at all, read the node as it is now
  const next = await new Reading().run(() => readMany(fs, all, undefined, FEW));
  t.equal(next.find((r) => r.containerId === SPIN_ID)!.stats.memory.current, 2000);
  const outside = await readMany(fs, all, undefined, FEW);
  t.equal(outside.find((r) => r.containerId === SPIN_ID)!.stats.memory.current, 2000);
  reading.release();
  const released = await reading.run(() => readMany(fs, all, undefined, FEW));
  t.equal(released.find((r) => r.containerId === SPIN_ID)!.stats.memory.current, 2000, 'a released reading keeps nothing');
});

t.test('a cgroup that cannot be read is skipped with one warning in every answer of the reading', async (t) => {
  const fx = realNode('systemd');
  t.teardown(fx.cleanup);
  const fs = new HostFs(fx.root);
  const all = await walkKubepods(fs);
  const spin = all.find((c) => c.containerId === SPIN_ID)!;
  // a directory in place of a file: EISDIR
  const current = path.join(fx.root, spin.dir.hostPath, 'memory.current');
  rmSync(current);
  mkdirSync(current);
  const broken = [spin];
  const reading = new Reading();
  for (const only of [FEW, undefined]) {
    const warnings: string[] = [];
    const got = await reading.run(() => readMany(fs, broken, undefined, only, warnings));
    t.equal(got.length, 0);
    t.equal(warnings.length, 1, warnings.join('; '));
    t.match(warnings[0], /unreadable \(EISDIR\), skipped/);
  }
});
