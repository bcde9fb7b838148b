/** Node health on the captured node's /proc values, plus kubelet healthz against local HTTP servers. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { statfsSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { HostFs } from '../../src/readers/hostfs/hostfs.js';
import { kubeletHealthz } from '../../src/readers/node/kubelet.js';
import { diskUse, nodeHealth, pidUse } from '../../src/view/node-health.js';
import { realNode } from '../fixtures/node-tree.js';

async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`, server };
}

t.test('kubelet healthz', async (t) => {
  const ok = await serve((_req, res) => res.end('ok'));
  const bad = await serve((_req, res) => {
    res.statusCode = 500;
    res.end('[-]syncloop failed: ' + 'x'.repeat(1000));
  });
  const hang = await serve(() => {}); // accepts, never answers
  t.teardown(() => {
    for (const s of [ok, bad, hang]) s.server.closeAllConnections();
    for (const s of [ok, bad, hang]) s.server.close();
  });
  t.match(await kubeletHealthz(ok.url), { url: ok.url, reachable: true, ok: true, status: 200, body: 'ok' });
  const b = await kubeletHealthz(bad.url);
  t.match(b, { reachable: true, ok: false, status: 500 });
  t.equal((b as { body: string }).body.length, 200, 'body excerpt bounded');
  const t0 = Date.now();
  const h = await kubeletHealthz(hang.url, 300);
  t.match(h, { reachable: false, ok: false, error: 'no answer within 300 ms' });
  t.comment(`hanging kubelet answered for in ${Date.now() - t0} ms (deadline 300 ms)`);
  // a port nothing listens on: take one and close it
  const closed = await serve(() => {});
  closed.server.close();
  await new Promise((r) => closed.server.once('close', r));
  t.match(await kubeletHealthz(closed.url), { reachable: false, error: /ECONNREFUSED/ });
});

t.test('node health from the fixture host root', async (t) => {
  const fx = realNode('systemd');
  t.teardown(fx.cleanup);
  const fs = new HostFs(fx.root);
  const h = await nodeHealth(fs, { kubeletHealthzUrl: 'http://127.0.0.1:1/healthz', kubeletTimeoutMs: 500 });
  t.equal(h.kernelRelease, '6.1.0-57-amd64');
  t.equal(h.uptimeSeconds, 1234.56);
  t.same(h.load, { load1: 1.02, load5: 0.83, load15: 0.41, runnable: 3 });
  t.same(h.memory, { totalBytes: 2014208 * 1024, availableBytes: 1664012 * 1024, availableRatio: 0.826137 });
  t.same(h.pressure.cpu?.some, { avg10: 58.9, avg60: 27.22, avg300: 9.17, total: 33109546 });
  t.same(h.pressure.memory?.full, { avg10: 0, avg60: 0, avg300: 0, total: 5387 });
  t.same(h.pressure.io?.some, { avg10: 0, avg60: 0.18, avg300: 0.12, total: 781909 });
  t.match(h.pids, { threads: 187, pidMax: 4194304, threadsMax: 15594, pidRatio: 0.000045, threadsRatio: 0.011992 });
  t.equal(h.pids.processes, 6, 'pids 1, 844, 867, 903, 987 and the 4242 link');
  t.match(h.cgroup, { version: 'v2', drivers: ['systemd'] });
  t.match(h.kubelet, { reachable: false, ok: false });
  t.same(h.disks.map((d) => [d.path, d.present]), [['/', true], ['/var/lib/containerd', true], ['/var/lib/kubelet', true]]);
  const st = statfsSync(path.join(fx.root, 'var/lib/kubelet'));
  const d = h.disks[2]!;
  t.equal(d.totalBytes, st.blocks * st.bsize);
  t.equal(d.inodesTotal, st.files);
  t.ok(d.availableRatio! > 0 && d.availableRatio! <= 1);
  t.ok(d.inodesFreeRatio! > 0 && d.inodesFreeRatio! <= 1);
});

t.test('missing pieces are nulls', async (t) => {
  const fx = realNode('cgroupfs');
  t.teardown(fx.cleanup);
  const { rmSync } = await import('node:fs');
  rmSync(path.join(fx.root, 'proc/pressure'), { recursive: true });
  rmSync(path.join(fx.root, 'proc/loadavg'));
  rmSync(path.join(fx.root, 'var/lib/containerd'), { recursive: true });
  const fs = new HostFs(fx.root);
  const h = await nodeHealth(fs, { kubeletHealthzUrl: 'http://127.0.0.1:1/healthz', kubeletTimeoutMs: 200 });
  t.same(h.pressure, { cpu: null, memory: null, io: null }, 'kernel without psi=1');
  t.equal(h.load, null);
  t.match(h.pids, { threads: null, pidRatio: null, pidMax: 4194304 });
  t.match(await diskUse(fs, '/var/lib/containerd'), { present: false, totalBytes: null, inodesFreeRatio: null });
  t.match(h.cgroup, { drivers: ['cgroupfs'] });
});

t.test('this machine', async (t) => {
  const fs = new HostFs('/');
  const p = await pidUse(fs);
  t.ok(p.processes! > 1 && p.threads! >= p.processes! - 5);
  t.ok(p.pidMax! >= 32768);
  const h = await nodeHealth(fs, { kubeletHealthzUrl: 'http://127.0.0.1:1/healthz', kubeletTimeoutMs: 200 });
  t.match(h.kernelRelease, /^\d+\.\d+/);
  t.ok(h.memory.totalBytes! > 0);
  t.equal(h.disks[0]!.present, true);
});
