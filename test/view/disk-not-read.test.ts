/**
 * A disk whose statfs misses its deadline is NOT READ, not absent: the first GET /v1/node of a
 * fresh agent on a loaded node (every libuv pool thread busy, so statfs waits behind them past
 * its second) says so, and triage concludes nothing from it.
 *
 * The pool is held the way a loaded node holds it: this process opens FIFOs that have no
 * writer, one open(2) per pool thread, each blocking its thread; a writer on each lets them go.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { DiskUse } from '../../src/model/node.js';
import { statfsCalls } from '../../src/readers/node/statfs.js';
import { HostFs } from '../../src/readers/hostfs/hostfs.js';
import { evictionChecks, readKubeletConfig } from '../../src/readers/node/kubelet-config.js';
import { nodeRule } from '../../src/triage/rules/node.js';
import { SnapshotIndex } from '../../src/triage/rules/index.js';
import { realNode } from '../fixtures/node-tree.js';
import { disk, healthySnapshot } from '../fixtures/triage-snapshot.js';
import { testApp } from '../helpers/app.js';
import { getText } from '../helpers/http.js';

const POOL = Number(process.env.UV_THREADPOOL_SIZE) || 4;

/** Hold every pool thread in open(2) of a FIFO; `release` gives each a writer until all have returned. */
function holdPool() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'nodetruth-pool-'));
  const fifos = Array.from({ length: POOL }, (_, i) => path.join(dir, `f${i}`));
  for (const f of fifos) execFileSync('mkfifo', [f]);
  const opened = fifos.map((f) => open(f, 'r').then((fh) => fh.close()));
  let done = 0;
  for (const p of opened) void p.then(() => done++);
  return {
    async release() {
      while (done < fifos.length) {
        for (const f of fifos) {
          try {
            closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
          } catch {
            /* ENXIO: its open has not started yet (queued behind another) or has returned */
          }
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const get = (base: string, p: string) => getText(`${base}${p}`);

t.test('first /v1/node with the pool busy past the statfs deadline: disks not read, then read', async (t) => {
  const fx = realNode('systemd');
  const ta = await testApp(['--host-root', fx.root]);
  await ta.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(ta.app.server.address() as AddressInfo).port}`;
  t.teardown(async () => {
    await ta.close();
    fx.cleanup();
  });

  const pool = holdPool();
  const first = get(base, '/v1/node');
  // every disk has its outcome (two calls late, the third without a slot) before the pool is let go
  while (statfsCalls.answers().length < 3) await new Promise((r) => setTimeout(r, 10));
  await pool.release();
  const r = await first;
  t.equal(r.status, 200, r.body.slice(0, 300));
  const body = JSON.parse(r.body) as { disks: DiskUse[]; warnings: string[] };
  t.same(body.disks.map((d) => [d.path, d.present]), [['/', null], ['/var/lib/containerd', null], ['/var/lib/kubelet', null]], 'not read, not absent');
  for (const d of body.disks) {
    t.match(d.notRead, /statfs did not return within 1000 ms|no free statfs slot/, `${d.path}: why`);
    t.equal(d.totalBytes, null);
    t.equal(d.availableRatio, null);
  }
  t.ok(body.warnings.some((w) => /^statfs \/var\/lib\/kubelet: .* not read$/.test(w)), 'named in warnings');

  // the late calls return once the pool is free: the next answer reads the disks
  while (statfsCalls.busy > 0) await new Promise((r) => setTimeout(r, 10));
  const again = JSON.parse((await get(base, '/v1/node')).body) as { disks: DiskUse[] };
  t.same(again.disks.map((d) => d.present), [true, true, true]);
});

t.test('triage and the eviction checks conclude nothing from a disk not read', async (t) => {
  const notRead = (p: string): DiskUse => ({ ...disk(p, 0), present: null, notRead: 'statfs did not return within 1000 ms', availableRatio: null, inodesFreeRatio: null, totalBytes: null, availableBytes: null, inodesTotal: null, inodesFree: null });
  const s = healthySnapshot();
  const h = s.host.ok ? s.host.value : (null as never);
  // / is nearly full, but the kubelet's and the runtime's filesystems were not read: they may be others
  h.disks = [disk('/', 0.01, 0.01), notRead('/var/lib/containerd'), notRead('/var/lib/kubelet')];
  t.same(nodeRule.run(s, new SnapshotIndex(s)).filter((f) => f.id === 'disk-pressure'), [], 'no disk finding from /');
  // no kubelet and no config on the host: kubelet's default thresholds
  const empty = mkdtempSync(path.join(os.tmpdir(), 'nodetruth-no-kubelet-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  const { eviction } = await readKubeletConfig(new HostFs(empty), null);
  t.equal(eviction.thresholds.filter((x) => x.from === 'default').length, 5);
  t.same(evictionChecks(eviction.thresholds, h.disks), [], 'no eviction check against /');
  // a path absent from the host is held by /: checked there
  h.disks = [disk('/', 0.01, 0.01), { ...notRead('/var/lib/containerd'), present: false }, notRead('/var/lib/kubelet')];
  t.same(nodeRule.run(s, new SnapshotIndex(s)).filter((f) => f.id === 'disk-pressure').map((f) => f.title), ["imagefs.available below kubelet's eviction threshold on /", "imagefs.inodesFree below kubelet's eviction threshold on /"]);
});
