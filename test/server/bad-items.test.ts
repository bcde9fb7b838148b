/**
 * One bad item never spoils an answer: on the captured node's tree, each
 * route skips what it cannot read, names it in `warnings`, and the rest stands; the
 * one thing asked for being unreadable is a problem with a stable status (never a 500).
 *
 * The tests run as root, which EACCES does not stop, so the bad items are made of
 * what stops root too, in the shapes a real node can hold them:
 * - a directory in place of a file (read(2): EISDIR): cpu.stat of one container,
 *   cgroup.procs of another, /proc/pressure/memory, /proc/<pid>/stat of one pid;
 * - a symlink loop: a container scope that links to itself, /proc/loadavg -> itself;
 * - a file in place of a directory: /proc/<pid> of one pid is a plain file;
 * - a vanished pid (listed in cgroup.procs, no /proc entry) and lines that are no pid;
 * - garbage in memory.events, cpu.stat and a PSI file beside well-formed lines.
 */
import http from 'node:http';
import { mkdirSync, rmSync, symlinkSync, writeFileSync, appendFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import {
  BESTEFFORT_ID,
  BESTEFFORT_UID,
  containerCgroupPath,
  GUARANTEED_ID,
  GUARANTEED_UID,
  OOM_CHILD_ID,
  POD_UID,
  podCgroupPath,
  realNodeSpec,
  SANDBOX_ID,
  SPIN_ID,
  STATIC_ID,
  STATIC_UID,
  tempHostRoot,
} from '../fixtures/node-tree.js';
import { testApp } from '../helpers/app.js';

const host = tempHostRoot(realNodeSpec('systemd'));
t.teardown(host.cleanup);
const cg = (p: string) => path.join(host.root, 'sys/fs/cgroup', p);
const proc = (p: string) => path.join(host.root, 'proc', p);

// cpu.stat of the guaranteed container is a directory: the cgroup is skipped (EISDIR)
const guaranteedScope = containerCgroupPath('systemd', 'guaranteed', GUARANTEED_UID, GUARANTEED_ID);
rmSync(path.join(cg(guaranteedScope), 'cpu.stat'));
mkdirSync(path.join(cg(guaranteedScope), 'cpu.stat'));
// the static pod's container scope is a symlink to itself (a loop where a cgroup belongs)
const staticScope = containerCgroupPath('systemd', 'burstable', STATIC_UID, STATIC_ID);
rmSync(cg(staticScope), { recursive: true });
symlinkSync(path.basename(cg(staticScope)), cg(staticScope));
// garbage beside good lines: the good ones are kept
const bestScope = containerCgroupPath('systemd', 'besteffort', BESTEFFORT_UID, BESTEFFORT_ID);
writeFileSync(path.join(cg(bestScope), 'memory.events'), `low 0\nhigh NaN\nmax ${'9'.repeat(400)}\noom 3\nno-value\noom_kill 2\n\x1b[31m junk\n`);
writeFileSync(path.join(cg(bestScope), 'cpu.stat'), `usage_usec 2000\nnr_periods 1.5\n${'x y z\n'.repeat(1000)}user_usec 1500\n`);
writeFileSync(path.join(cg(bestScope), 'cpu.pressure'), 'some avg10=0x10 avg60=0.00 avg300=0.00 total=1\nsome avg10=1.50 avg60=0.50 avg300=0.10 total=4242\nfull avg10=1e3 avg60=0 avg300=0 total=1\n');
// cgroup.procs of the spin container is a directory: its processes cannot be read
const spinScope = containerCgroupPath('systemd', 'burstable', POD_UID, SPIN_ID);
rmSync(path.join(cg(spinScope), 'cgroup.procs'));
mkdirSync(path.join(cg(spinScope), 'cgroup.procs'));
// the OOM child's cgroup.procs: its pid, a vanished one, one whose stat is a directory,
// one whose /proc entry is a file, and lines that are no pid
const childScope = containerCgroupPath('systemd', 'burstable', POD_UID, OOM_CHILD_ID);
appendFileSync(path.join(cg(childScope), 'cgroup.procs'), '55555\n31000\n31001\nabc\n0\n99999999999\n');
mkdirSync(proc('31000/stat'), { recursive: true });
writeFileSync(proc('31000/status'), 'Name:\tx\nPPid:\t844\n');
writeFileSync(proc('31001'), 'a file where /proc/31001/ should be a directory\n');
// node files: a directory, a link loop, garbage in a PSI file
rmSync(proc('pressure/memory'));
mkdirSync(proc('pressure/memory'));
rmSync(proc('loadavg'));
symlinkSync('loadavg', proc('loadavg'));
writeFileSync(proc('pressure/cpu'), 'some avg10=abc avg60=0.00 avg300=0.00 total=1\nsome avg10=2.00 avg60=1.00 avg300=0.50 total=777\n');

const ta = await testApp(['--host-root', host.root]);
t.teardown(() => ta.close());
await ta.app.listen({ port: 0, host: '127.0.0.1' });
const port = (ta.app.server.address() as AddressInfo).port;

/** A real HTTP request to the listening agent. */
function get(urlPath: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; json<T = Record<string, unknown>>(): T }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, json: <T>() => JSON.parse(body) as T }));
    });
    req.on('error', reject);
  });
}

type Cg = { path: string; containerId: string | null; kind: string; memory: { events: Record<string, number | null> | null }; cpu: Record<string, unknown>; pressure: { cpu: unknown } };

t.test('/v1/cgroups: an EISDIR cgroup and a symlink-loop scope are skipped and named; garbage lines skipped, good ones kept', async (t) => {
  const r = await get('/v1/cgroups');
  t.equal(r.status, 200, r.body.slice(0, 300));
  const b = r.json<{ items: Cg[]; warnings: string[] }>();
  t.notOk(b.items.some((i) => i.containerId === GUARANTEED_ID), 'the cgroup with a directory for cpu.stat is not listed');
  t.ok(b.items.some((i) => i.path === podCgroupPath('systemd', 'guaranteed', GUARANTEED_UID)), 'its pod is');
  t.ok(b.warnings.some((w) => w.includes(guaranteedScope) && /EISDIR/.test(w)), 'named: EISDIR');
  t.ok(b.warnings.some((w) => w.includes(staticScope) && /symbolic link/.test(w)), 'named: the scope that is a link');
  const best = b.items.find((i) => i.containerId === BESTEFFORT_ID)!;
  t.ok(best, 'the cgroup with garbage lines is listed');
  t.match(best.memory.events, { low: 0, high: null, max: null, oom: 3, oomKill: 2 }, 'memory.events: good lines kept');
  t.match(best.cpu, { usageUsec: 2000, userUsec: 1500, nrPeriods: null }, 'cpu.stat: good lines kept');
  t.match(best.pressure.cpu, { some: { avg10: 1.5, total: 4242 }, full: null }, 'PSI: the well-formed some line kept, hex and exponent refused');
  t.ok(b.warnings.some((w) => w.includes(bestScope) && /malformed/.test(w) && /memory\.events/.test(w) && /cpu\.stat/.test(w) && /cpu\.pressure/.test(w)), b.warnings.join('\n'));
  t.ok(b.items.length >= 8, `${b.items.length} cgroups still listed`);
});

t.test('/v1/cgroups/{id}: the unreadable cgroup asked for is a 503 problem with the reason; its pod answers with a warning', async (t) => {
  const r = await get(`/v1/cgroups/${GUARANTEED_ID}`);
  t.equal(r.status, 503, r.body);
  t.match(r.headers['content-type'], /^application\/problem\+json/);
  t.match(r.json(), { status: 503, title: 'Source unreadable', detail: /EISDIR/ });
  const pod = await get(`/v1/cgroups/${GUARANTEED_UID}`);
  t.equal(pod.status, 200, pod.body);
  const b = pod.json<{ items: Cg[]; warnings: string[] }>();
  t.ok(b.items.length >= 2, 'the pod and its readable containers');
  t.ok(b.warnings.some((w) => w.includes(guaranteedScope)));
});

t.test('/v1/throttling: the container with a directory for cpu.stat is skipped and named', async (t) => {
  const r = await get('/v1/throttling?window=1s');
  t.equal(r.status, 200, r.body.slice(0, 300));
  const b = r.json<{ items: { containerId: string }[]; warnings: string[] }>();
  t.notOk(b.items.some((i) => i.containerId === GUARANTEED_ID));
  t.ok(b.items.some((i) => i.containerId === SPIN_ID), 'the others are measured');
  t.equal(b.warnings.filter((w) => w.includes(guaranteedScope) && /EISDIR/.test(w)).length, 1, 'named once, not once per sweep');
});

t.test('/v1/containers/{id}/processes: a vanished pid, an unreadable pid and non-pid lines are skipped and named', async (t) => {
  const r = await get(`/v1/containers/${OOM_CHILD_ID}/processes`);
  t.equal(r.status, 200, r.body);
  const b = r.json<{ items: { pid: number }[]; warnings: string[] }>();
  t.same(b.items.map((p) => p.pid), [903], 'the container\'s real process stands');
  t.ok(b.warnings.some((w) => /55555/.test(w) && /exited/.test(w)), 'the vanished pid');
  t.ok(b.warnings.some((w) => /^pid 31000: .*unreadable/.test(w)), 'the pid whose stat is a directory');
  t.ok(b.warnings.some((w) => /3 line\(s\) that are no pid/.test(w)), 'abc, 0 and a pid past 2^31');
  t.notOk(b.warnings.some((w) => /^pid 903/.test(w)));
});

t.test('/v1/containers/{id}/processes of a container whose only cgroup.procs is a directory: 503 with the reason', async (t) => {
  const r = await get(`/v1/containers/${SPIN_ID}/processes`);
  t.equal(r.status, 503, r.body);
  t.match(r.json(), { title: 'Source unreadable', detail: new RegExp(`cannot read the processes of container ${SPIN_ID}: .*cgroup\\.procs: EISDIR`) });
  const ns = await get(`/v1/containers/${SPIN_ID}/namespaces`);
  t.equal(ns.status, 503, ns.body);
});

t.test('/v1/containers/{id}/namespaces: an unreadable sibling cgroup is skipped with a warning, the sandbox still found', async (t) => {
  const r = await get(`/v1/containers/${OOM_CHILD_ID}/namespaces`);
  t.equal(r.status, 200, r.body);
  const b = r.json<{ pid: number; sandbox: { containerId: string } | null; warnings: string[] }>();
  t.equal(b.pid, 903);
  t.match(b.sandbox, { containerId: SANDBOX_ID, source: 'earliest-process' });
  t.ok(b.warnings.some((w) => w.includes(spinScope) && /EISDIR/.test(w)), b.warnings.join('\n'));
});

t.test('/v1/node: a directory, a link loop and garbage lines among the node files: nulls and warnings, the rest stands', async (t) => {
  const r = await get('/v1/node');
  t.equal(r.status, 200, r.body);
  const b = r.json<{ load: unknown; pressure: Record<string, unknown>; kernelRelease: string; memory: { totalBytes: number }; warnings: string[] }>();
  t.equal(b.load, null, 'loadavg is a loop');
  t.equal(b.pressure.memory, null, 'pressure/memory is a directory');
  t.match(b.pressure.cpu, { some: { avg10: 2, total: 777 } }, 'the good PSI line of pressure/cpu');
  t.ok(b.kernelRelease, 'the rest stands');
  t.ok(b.memory.totalBytes > 0);
  t.ok(b.warnings.some((w) => w.startsWith('/proc/loadavg: unreadable')), b.warnings.join('\n'));
  t.ok(b.warnings.some((w) => w.startsWith('/proc/pressure/memory: unreadable')));
  t.ok(b.warnings.some((w) => w.startsWith('/proc/pressure/cpu: malformed')));
});

t.test('/v1/triage: 200 with the skipped items in warnings', async (t) => {
  const r = await get('/v1/triage?window=200ms');
  t.equal(r.status, 200, r.body.slice(0, 300));
  const b = r.json<{ warnings: string[]; sources: Record<string, { ok: boolean }> }>();
  t.ok(b.sources.cgroups!.ok && b.sources.host!.ok && b.sources.throttling!.ok, 'the sources answered');
  t.ok(b.warnings.some((w) => w.startsWith('cgroups: ') && w.includes(guaranteedScope)), 'cgroups named');
  t.ok(b.warnings.some((w) => w.startsWith('host: /proc/loadavg')), 'node files named');
  t.ok(b.warnings.some((w) => w.startsWith('throttling: ') && w.includes(guaranteedScope)));
});

t.test('an untouched cgroup reads with no warning (control)', async (t) => {
  t.notOk((await get('/v1/cgroups')).json<{ warnings: string[] }>().warnings.some((w) => w.includes(childScope)));
});
