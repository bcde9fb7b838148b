/**
 * A /proc/<pid>/cmdline read that never returns (the target's mmap_lock is
 * held, e.g. by a hung NFS mount) must not take libuv's thread pool with it.
 *
 * Simulated with a FIFO that has no writer in place of /proc/<pid>/cmdline in a fixture
 * host root: the cmdline reader opens without O_NONBLOCK (procfs ignores it), so the
 * open(2) blocks one pool thread exactly as the real read(2) would. Teardown opens each
 * FIFO for writing, which releases the blocked threads.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { procReads, PROC_LIMITS } from '../../../src/readers/proc/limiter.js';
import { realNodeSpec, SPIN_ID, tempHostRoot } from '../../fixtures/node-tree.js';
import { testApp } from '../../helpers/app.js';
import { getText } from '../../helpers/http.js';

const spec = realNodeSpec('systemd');
const spin = spec.pods.flatMap((p) => p.containers).find((c) => c.id === SPIN_ID)!;
const tmpl = spec.procs!.find((p) => p.pid === 987)!;
const extra = [2001, 2002, 2003, 2004];
spin.procs = [987, ...extra];
for (const pid of extra) spec.procs!.push({ ...tmpl, pid, startTicks: tmpl.startTicks + pid });
const host = tempHostRoot(spec);
const fifos = [987, 2001, 2002, 2003].map((pid) => path.join(host.root, 'proc', String(pid), 'cmdline'));
for (const f of fifos) {
  rmSync(f);
  execFileSync('mkfifo', [f]);
}
mkdirSync(path.join(host.root, 'var/log'), { recursive: true });
writeFileSync(path.join(host.root, 'var/log/syslog'), 'line one\nline two\n');

const ta = await testApp(['--host-root', host.root]);
await ta.app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(ta.app.server.address() as AddressInfo).port}`;

t.teardown(async () => {
  // a writer on each FIFO lets the blocked open(2) return: the pool threads come back
  for (const f of fifos) {
    try {
      closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      /* ENXIO: nobody is blocked on this one */
    }
  }
  const until = Date.now() + 5000;
  while (procReads.busy > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  await ta.close();
  host.cleanup();
});

const get = (p: string) => getText(`${base}${p}`);

t.test('10 process listings over stuck cmdline reads: the agent keeps answering', async (t) => {
  if (process.env.UV_THREADPOOL_SIZE && process.env.UV_THREADPOOL_SIZE !== '4') t.comment(`UV_THREADPOOL_SIZE=${process.env.UV_THREADPOOL_SIZE}`);
  let maxBusy = 0;
  let maxStuck = 0;
  const sample = setInterval(() => {
    maxBusy = Math.max(maxBusy, procReads.busy);
    maxStuck = Math.max(maxStuck, procReads.stuck);
  }, 1);
  const listings = Array.from({ length: 10 }, () => get(`/v1/containers/${SPIN_ID}/processes`));
  // while they are in flight: the event loop, a cgroup read and a file read (libuv's pool) answer
  const [health, cgroups, file] = await Promise.all([get('/healthz'), get('/v1/cgroups'), get('/v1/logs?query=/var/log/syslog')]);
  t.equal(health.status, 200);
  t.equal(cgroups.status, 200);
  t.ok((JSON.parse(cgroups.body) as { items: unknown[] }).items.length > 0, 'cgroups listed');
  t.equal(file.status, 200, file.body);
  t.match(file.body, /line two/);

  const done = await Promise.all(listings);
  clearInterval(sample);
  for (const r of done) {
    t.equal(r.status, 200, r.body.slice(0, 300));
    const b = JSON.parse(r.body) as { items: Array<{ pid: number; cmdline: string[]; cmdlineUnavailable?: string; comm: string }>; warnings: string[] };
    t.same(b.items.map((p) => p.pid), [987, ...extra], 'every pid listed, from stat and status');
    const stuck = b.items.filter((p) => fifos.some((f) => f.includes(`/proc/${p.pid}/`)));
    t.ok(stuck.every((p) => p.cmdline.length === 0 && /not read/.test(p.cmdlineUnavailable ?? '')), 'stuck pids say their cmdline is unavailable');
    // once both slots are held by stuck reads, no cmdline is read at all (they would queue behind them)
    const ok = b.items.find((p) => p.pid === 2004)!;
    t.ok(JSON.stringify(ok.cmdline) === JSON.stringify(tmpl.cmdline) || /stuck|slot/.test(ok.cmdlineUnavailable ?? ''), 'a readable cmdline is read, or the row says the limiter is full');
    t.ok(b.warnings.some((w) => /pid \d+: cmdline not read/.test(w)), 'named in warnings');
  }
  t.ok(maxBusy <= PROC_LIMITS.maxBlockingReads, `blocking-read slots in use stayed <= ${PROC_LIMITS.maxBlockingReads} (max seen ${maxBusy})`);
  t.ok(maxStuck <= PROC_LIMITS.maxBlockingReads, `stuck reads stayed <= the bound (max seen ${maxStuck})`);
  t.equal(procReads.stuck, PROC_LIMITS.maxBlockingReads, 'the threads blocked on FIFOs are still counted as busy');

  const ready = JSON.parse((await get('/readyz')).body) as { sources: Record<string, { ok: boolean; detail: string }> };
  t.equal(ready.sources.proc?.ok, false, 'readiness is not green while reads hang');
  t.match(ready.sources.proc?.detail, /stuck/);
  // and file reads still work after all of it
  t.equal((await get('/v1/logs?query=/var/log/syslog')).status, 200);
});

t.test('cmdline is cut at the cap and says so', async (t) => {
  const long = path.join(host.root, 'proc', '2004', 'cmdline');
  writeFileSync(long, `/bin/app\0${'x'.repeat(PROC_LIMITS.cmdlineMaxBytes * 3)}\0`);
  const { readProcess, ProcBudget } = await import('../../../src/readers/proc/proc.js');
  const { HostFs } = await import('../../../src/readers/hostfs/hostfs.js');
  const { procGuard } = await import('../../../src/readers/proc/limiter.js');
  const p = await readProcess(new HostFs(host.root), 2004, { budget: new ProcBudget(1, 2000, procGuard(1, 2000)) });
  t.equal(p?.cmdlineTruncated, true);
  t.ok(p!.cmdline.join('\0').length <= PROC_LIMITS.cmdlineMaxBytes);
  t.equal(p!.cmdline[0], '/bin/app');
});

t.test('the per-request budget: past N pids, rows come from stat/status with a reason', async (t) => {
  const { ProcBudget, cmdlineWarnings } = await import('../../../src/readers/proc/proc.js');
  const { readPidsSkipping } = await import('../../../src/view/container-processes.js');
  const { HostFs } = await import('../../../src/readers/hostfs/hostfs.js');
  const { procGuard } = await import('../../../src/readers/proc/limiter.js');
  const warnings: string[] = [];
  const rows = await readPidsSkipping(new HostFs(host.root), [1, 844, 903, 2004], { budget: new ProcBudget(2, 10_000, procGuard(1, 2000)) }, warnings);
  t.same(warnings, [], 'every pid read');
  t.equal(rows.length, 4);
  t.equal(rows.filter((r) => r.cmdlineUnavailable === undefined).length, 2);
  t.match(rows.find((r) => r.cmdlineUnavailable)?.cmdlineUnavailable, /budget of 2 cmdlines/);
  t.equal(cmdlineWarnings(rows).length, 2);
});
