/**
 * The cgroup, process, namespace, throttling and node routes through app.inject(),
 * over generated host roots laid out as the captured node: without a runtime
 * (IDs only), with a fake CRI runtime (names joined), with a runtime too slow to
 * wait for, on cgroupfs, and on a hybrid (v1) host.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { testApp } from '../helpers/app.js';
import { FakeCriServer, type FakeNode } from '../helpers/fake-cri.js';
import {
  armCanaries,
  CAPTURED,
  containerCgroupPath,
  ESCAPE_ID,
  ESCAPE_PID,
  GUARANTEED_ID,
  GUARANTEED_SANDBOX,
  GUARANTEED_UID,
  HOST_NS,
  NOCTRL_ID,
  OOM_CHILD_ID,
  OOM_MAIN_ID,
  POD_UID,
  realNode,
  realNodeSpec,
  SANDBOX_ID,
  SANDBOX_NS,
  SPIN_ID,
  STATIC_UID,
} from '../fixtures/node-tree.js';

const fx = realNode('systemd');
const touched = armCanaries(fx.canaries);
const noRuntime = await testApp(['--host-root', fx.root, '--cri-endpoint', `unix://${path.join(tmpdir(), 'nodetruth-no-such-cri.sock')}`, '--kubelet-healthz', 'http://127.0.0.1:1/healthz']);
t.teardown(async () => {
  await noRuntime.close();
  fx.cleanup();
});
const get = (url: string, headers: Record<string, string> = {}) => noRuntime.app.inject({ method: 'GET', url, headers });

type Rec = Record<string, any>;

t.test('/v1/cgroups without a runtime: every cgroup, IDs only, real values', async (t) => {
  const res = await get('/v1/cgroups');
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.cgroupVersion, 'v2');
  t.same(body.drivers, ['systemd']);
  t.match(body.runtime, { joined: false, detail: /runtime unavailable.*IDs only/ });
  t.equal(body.items.length, 13, '5 pods, 8 containers; the dead and the escaping ones absent');
  const spin = body.items.find((r: Rec) => r.containerId === SPIN_ID);
  t.match(spin, {
    kind: 'container',
    qos: 'burstable',
    podUid: POD_UID,
    runtime: 'cri-containerd',
    podName: null,
    containerName: null,
    sandbox: null,
    cpu: { usageUsec: 1824308, nrPeriods: 169, nrThrottled: 168, throttledUsec: 14961853, max: { quotaUsec: 10000, periodUsec: 100000, quotaCores: 0.1 }, weight: 4 },
    memory: { current: 593920, max: 67108864, high: 'max', workingSet: 0 },
    pids: { current: 1, max: 'max' },
    pressure: { cpu: { some: { avg10: 47.58, total: 10277915 } } },
  });
  t.notOk('dir' in spin, 'no resolved real paths leak');
  const pod = body.items.find((r: Rec) => r.kind === 'pod' && r.podUid === POD_UID);
  t.same(pod.memory.events, { low: 0, high: 0, max: 50, oom: 2, oomKill: 2, oomGroupKill: 0 }, 'the OOM kill of the dead container stays visible at pod level');
  t.equal(pod.memory.max, 'max');
  t.equal(pod.memory.high, 'max');
  t.same(Object.keys(spin.memory).slice(0, 3), ['current', 'max', 'high'], 'memory.high beside memory.max');
  const bare = body.items.find((r: Rec) => r.containerId === NOCTRL_ID);
  t.match(bare, { memory: { current: null, max: null, high: null, events: null }, pids: { current: null, max: null }, io: null, cpu: { usageUsec: 5555, nrPeriods: null, max: null } });
  t.notMatch(res.body, /777777777|CANARY/);
  t.notOk(res.body.includes(fx.root), 'no real path of the agent side in the answer');
});

t.test('/v1/cgroups sorting and filters', async (t) => {
  const oom = (await get('/v1/cgroups?sort=oom')).json().items;
  t.same(oom.slice(0, 2).map((r: Rec) => [r.kind, r.containerId, r.memory.events.oomKill]), [['pod', null, 2], ['container', OOM_CHILD_ID, 1]]);
  const mem = (await get('/v1/cgroups?sort=memory')).json().items;
  t.equal(mem[0].podUid, GUARANTEED_UID);
  t.equal(mem[0].memory.current, 104857600);
  t.equal(mem.at(-1).containerId, NOCTRL_ID, 'unknown memory sorts last');
  const thr = (await get('/v1/cgroups?sort=throttling')).json().items;
  t.equal(thr[0].containerId, SPIN_ID);
  const one = (await get(`/v1/cgroups?podUid=${POD_UID}`)).json().items;
  t.same(one.map((r: Rec) => r.containerId ?? 'pod').sort(), ['pod', SANDBOX_ID, OOM_CHILD_ID, SPIN_ID].sort());
  const pods = (await get('/v1/cgroups?kind=pod')).json().items;
  t.equal(pods.length, 5);
  const stat = (await get(`/v1/cgroups?podUid=${STATIC_UID}`)).json().items;
  t.equal(stat.length, 2, 'static pod UID (32 hex)');
  const ns = await get('/v1/cgroups?namespace=default');
  t.equal(ns.statusCode, 503, 'a namespace filter needs the runtime');
  t.match(ns.json(), { code: 'needs_runtime', param: 'namespace', detail: /namespace filter needs the runtime/ });
});

t.test('/v1/cgroups as text', async (t) => {
  const res = await get('/v1/cgroups?format=text&sort=throttling');
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  const lines = res.body.split('\n');
  t.match(lines[0], /^KIND\s+POD UID\s+POD\s+NAMESPACE\s+CONTAINER\s+NAME\s+QOS\s+MEMORY\s+WORKING SET\s+LIMIT\s+HIGH\s+CPU QUOTA\s+THROTTLED\s+OOM\s+OOM KILL$/);
  t.match(lines[1], new RegExp(`^container\\s+${POD_UID}\\s+${SPIN_ID.slice(0, 13)}\\s+burstable\\s+580KiB\\s+0B\\s+64MiB\\s+max\\s+0.1\\s+99.4%\\s+0\\s+0$`));
  const acc = await get('/v1/cgroups?sort=oom', { accept: 'text/plain' });
  t.match(acc.body.split('\n')[1], new RegExp(`^pod\\s+${POD_UID}\\s+burstable\\s+988KiB\\s+840KiB\\s+max\\s+max\\s+max\\s+2\\s+2$`));
});

t.test('/v1/cgroups/{id}: pod UID, container prefix, ambiguity, dead container', async (t) => {
  const pod = (await get(`/v1/cgroups/${POD_UID}`)).json();
  t.equal(pod.match, 'pod');
  t.equal(pod.items[0].kind, 'pod');
  t.equal(pod.items.length, 4);
  const c = (await get('/v1/cgroups/af59')).json();
  t.equal(c.match, 'container');
  t.same(c.items.map((r: Rec) => r.containerId), [SPIN_ID, null], 'the container, then its pod');
  t.equal(c.items[1].memory.events.oomKill, 2);
  t.equal((await get(`/v1/cgroups/${SPIN_ID}`)).json().items[0].containerId, SPIN_ID, 'full id');
  t.equal((await get(`/v1/cgroups/${STATIC_UID}`)).json().match, 'pod', 'static pod by its 32-hex UID');
  const amb = await get('/v1/cgroups/c0ffee');
  t.equal(amb.statusCode, 409);
  t.same(amb.json().candidates.sort(), [GUARANTEED_ID, GUARANTEED_SANDBOX].sort());
  const dead = await get(`/v1/cgroups/${OOM_MAIN_ID.slice(0, 12)}`);
  t.equal(dead.statusCode, 404);
  t.match(dead.json().detail, /removed when it exits, its pod's cgroup keeps the OOM counts/);
  t.equal((await get(`/v1/cgroups/${ESCAPE_ID}`)).statusCode, 404, 'a symlinked scope is not a cgroup');
  t.equal((await get('/v1/cgroups/00000000-0000-4000-8000-000000000000')).statusCode, 404);
  const text = await get(`/v1/cgroups/${POD_UID}?format=text`);
  t.match(text.body, /^KIND\s+POD UID/);
});

t.test('memory.high set (MemoryQoS: no request, 64Mi limit × factor 0.9, whole pages), over real HTTP: beside memory.max in JSON and text', async (t) => {
  const spec = realNodeSpec('systemd');
  const spin = spec.pods[0]!.containers.find((c) => c.id === SPIN_ID)!;
  spin.files = { ...spin.files, 'memory.high': '60395520\n' };
  const tree = realNode('systemd', spec);
  const app = await testApp(['--host-root', tree.root, '--cri-endpoint', `unix://${path.join(tmpdir(), 'nodetruth-no-such-cri.sock')}`, '--kubelet-healthz', 'http://127.0.0.1:1/healthz']);
  t.teardown(async () => {
    await app.close();
    tree.cleanup();
  });
  await app.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.app.server.address() as { port: number };
  const body = (await (await fetch(`http://127.0.0.1:${port}/v1/cgroups/${SPIN_ID}`)).json()) as { items: Rec[] };
  t.same([body.items[0]!.memory.max, body.items[0]!.memory.high], [67108864, 60395520]);
  t.equal(body.items[1]!.memory.high, 'max', 'its pod: memory.high not set');
  const text = await (await fetch(`http://127.0.0.1:${port}/v1/cgroups/${SPIN_ID}?format=text`)).text();
  t.match(text.split('\n')[1], /\s64MiB\s+57\.6MiB\s+0\.1\s/);
});

t.test('hostile ids and query values: 4xx before any path is built', async (t) => {
  const bad = [
    '/v1/cgroups/..',
    '/v1/cgroups/..%2F..%2F..%2Fetc%2Fpasswd',
    '/v1/cgroups/af59%2F..%2F..',
    '/v1/cgroups/af59%00',
    '/v1/cgroups/AF59',
    `/v1/cgroups/${'a'.repeat(65)}`,
    '/v1/cgroups/7F3C2A10-1111-4222-8333-944455556666',
    '/v1/cgroups/7f3c2a10_1111_4222_8333_944455556666',
    '/v1/cgroups/%2Fsys%2Ffs%2Fcgroup',
    '/v1/cgroups?podUid=..%2F..',
    '/v1/cgroups?podUid=7f3c2a10_1111_4222_8333_944455556666',
    '/v1/cgroups?sort=rm%20-rf',
    '/v1/cgroups?namespace=..',
    '/v1/cgroups?unknown=1',
    `/v1/containers/${POD_UID}/processes`,
    '/v1/containers/..%2F..%2Fproc%2F1/processes',
    '/v1/containers/af59%20/namespaces',
    '/v1/throttling?window=0s',
    '/v1/throttling?window=31s',
    '/v1/throttling?window=5',
    '/v1/throttling?window=1s;ls',
    '/v1/throttling?podUid=x',
  ];
  for (const url of bad) {
    const res = await get(url);
    t.ok(res.statusCode >= 400 && res.statusCode < 500, `${url} -> ${res.statusCode}`);
    t.match(res.headers['content-type'], /^application\/problem\+json/);
  }
  t.equal((await get('/v1/cgroups/..%2F..%2Fetc')).statusCode, 400);
});

t.test('/v1/containers/{id}/processes: from cgroup.procs, a /proc link out of the root is skipped', async (t) => {
  const res = await get('/v1/containers/af59/processes');
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.containerId, SPIN_ID);
  t.equal(body.cgroup, containerCgroupPath('systemd', 'burstable', POD_UID, SPIN_ID));
  t.same(body.items, [{ pid: 987, ppid: 844, comm: 'sh', cmdline: ['/bin/sh', '-c', 'while :; do :; done'], state: 'R', rssBytes: 4096, threads: 1, startTicks: 3100 }]);
  t.notOk(body.items.some((p: Rec) => p.pid === ESCAPE_PID));
  const text = await get('/v1/containers/673bde/processes?format=text');
  t.match(text.body, /^PID\s+PPID\s+STATE\s+RSS\s+THREADS\s+COMM\s+CMDLINE\n903\s+844\s+S\s+4KiB\s+1\s+sleep\s+sleep 3600\n$/);
  const none = await get(`/v1/containers/${GUARANTEED_ID}/processes`);
  t.same(none.json().items, [], 'a container with no process left');
  t.equal((await get(`/v1/containers/${OOM_MAIN_ID}/processes`)).statusCode, 404);
  t.equal((await get('/v1/containers/c0ffee/processes')).statusCode, 409);
});

t.test('/v1/containers/{id}/namespaces: host, sandbox (earliest process without a runtime), private', async (t) => {
  const res = await get(`/v1/containers/${OOM_CHILD_ID.slice(0, 8)}/namespaces`);
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.match(body, { containerId: OOM_CHILD_ID, podUid: POD_UID, pid: 903, sandbox: { containerId: SANDBOX_ID, pid: 867, source: 'earliest-process' } });
  const by = Object.fromEntries(body.items.map((n: Rec) => [n.type, n]));
  t.same(
    Object.fromEntries(body.items.map((n: Rec) => [n.type, n.sharedWith])),
    { cgroup: 'private', ipc: 'sandbox', mnt: 'private', net: 'sandbox', pid: 'private', pid_for_children: 'private', time: 'host', time_for_children: 'host', user: 'host', uts: 'sandbox' },
  );
  t.same(by.net, { type: 'net', inode: SANDBOX_NS.net, sharedWith: 'sandbox', hostInode: HOST_NS.net, sandboxInode: SANDBOX_NS.net });
  const self = (await get(`/v1/containers/${SANDBOX_ID.slice(0, 5)}/namespaces`)).json();
  t.match(self.sandbox, { containerId: SANDBOX_ID, pid: 867, source: 'self' });
  t.ok(self.items.every((n: Rec) => n.sharedWith !== 'private'), "the sandbox's own namespaces are the sandbox's");
  t.equal((await get(`/v1/containers/${GUARANTEED_ID}/namespaces`)).statusCode, 404, 'no process: 404');
  const text = await get(`/v1/containers/${SPIN_ID}/namespaces?format=text`);
  t.match(text.body, /^TYPE\s+INODE\s+SHARED WITH\s+HOST\s+SANDBOX\n/);
  t.match(text.body, new RegExp(`\\nnet\\s+${SANDBOX_NS.net}\\s+sandbox\\s+${HOST_NS.net}\\s+${SANDBOX_NS.net}\\n`));
});

t.test('/v1/throttling over a real 1 s window, the spin container throttling meanwhile', async (t) => {
  const stat = path.join(fx.root, 'sys/fs/cgroup', containerCgroupPath('systemd', 'burstable', POD_UID, SPIN_ID), 'cpu.stat');
  writeFileSync(stat, CAPTURED.spin.cpuStat);
  // The later state is written once the first sample has read the file (its atime moves: relatime
  // updates it on the first read after a write), not at a fixed time that a loaded machine can
  // pass before the first sample.
  const atimeBefore = statSync(stat).atimeMs;
  let polls = 0;
  const poller = setInterval(() => {
    if (statSync(stat).atimeMs === atimeBefore && ++polls < 2000) return;
    clearInterval(poller);
    writeFileSync(stat, CAPTURED.spin.cpuStatLater);
  }, 2);
  t.teardown(() => clearInterval(poller));
  const t0 = Date.now();
  const res = await get('/v1/throttling?window=1s');
  clearInterval(poller);
  t.ok(polls < 2000, 'the first sample was seen reading cpu.stat (atime)');
  t.equal(res.statusCode, 200);
  t.ok(Date.now() - t0 >= 1000);
  const body = res.json();
  t.ok(body.windowMs >= 1000, `window ${body.windowMs} ms`);
  t.match(body.items[0], { containerId: SPIN_ID, periods: 31, throttledPeriods: 31, throttledShare: 1, throttledSeconds: 2.782689, cpuMax: { quotaCores: 0.1 }, podName: null });
  t.equal(body.items.length, 8);
  writeFileSync(stat, CAPTURED.spin.cpuStat);
});

t.test('/v1/node', async (t) => {
  const res = await get('/v1/node');
  t.equal(res.statusCode, 200);
  const b = res.json();
  t.match(b, {
    kernelRelease: '6.1.0-57-amd64',
    uptimeSeconds: 1234.56,
    memory: { totalBytes: 2014208 * 1024, availableBytes: 1664012 * 1024 },
    pids: { threads: 187, pidMax: 4194304, threadsMax: 15594 },
    cgroup: { version: 'v2', drivers: ['systemd'], reason: null },
    kubelet: { url: 'http://127.0.0.1:1/healthz', reachable: false, ok: false },
    runtime: { reachable: false, ready: false },
    pressure: { cpu: { some: { avg10: 58.9 } } },
  });
  t.same(b.disks.map((d: Rec) => d.path), ['/', '/var/lib/containerd', '/var/lib/kubelet']);
  const text = await get('/v1/node?format=text');
  t.match(text.body, /^WHAT\s+VALUE\nkernel\s+6\.1\.0-57-amd64\n/);
  t.match(text.body, /\ncgroup\s+v2 systemd\n/);
  t.match(text.body, /\npsi cpu\s+some 58\.9\/27\.22\/9\.17 full 0\/0\/0\n/);
  t.match(text.body, /\nkubelet\s+unreachable: /);
});

t.test('nothing outside the root was read', async (t) => {
  t.same(touched(), []);
});

t.test('cgroupfs driver', async (t) => {
  const node = realNode('cgroupfs');
  const a = await testApp(['--host-root', node.root, '--cri-endpoint', `unix://${node.root}/none.sock`]);
  t.teardown(async () => {
    await a.close();
    node.cleanup();
  });
  const body = (await a.app.inject({ method: 'GET', url: '/v1/cgroups?sort=oom' })).json();
  t.same(body.drivers, ['cgroupfs']);
  t.equal(body.items[0].path, `/kubepods/burstable/pod${POD_UID}`);
  t.equal(body.items[0].memory.events.oomKill, 2);
  const c = (await a.app.inject({ method: 'GET', url: `/v1/cgroups/${SPIN_ID.slice(0, 6)}` })).json();
  t.equal(c.items[0].path, `/kubepods/burstable/pod${POD_UID}/${SPIN_ID}`);
  t.equal(c.items[0].runtime, null);
  const p = (await a.app.inject({ method: 'GET', url: `/v1/containers/${OOM_CHILD_ID}/processes` })).json();
  t.equal(p.items[0].pid, 903);
});

t.test('hybrid (cgroup v1) host: 501 with the reason, /v1/node still answers', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-v1-'));
  for (const c of ['memory/kubepods/burstable', 'cpu,cpuacct', 'pids', 'unified']) mkdirSync(path.join(root, 'sys/fs/cgroup', c), { recursive: true });
  writeFileSync(path.join(root, 'sys/fs/cgroup/unified/cgroup.controllers'), '\n');
  mkdirSync(path.join(root, 'proc/sys/kernel'), { recursive: true });
  writeFileSync(path.join(root, 'proc/sys/kernel/osrelease'), '4.19.0-27-amd64\n');
  const a = await testApp(['--host-root', root, '--cri-endpoint', `unix://${root}/none.sock`, '--kubelet-healthz', 'http://127.0.0.1:1/healthz']);
  t.teardown(async () => {
    await a.close();
    rmSync(root, { recursive: true, force: true });
  });
  for (const url of ['/v1/cgroups', `/v1/cgroups/${POD_UID}`, '/v1/throttling?window=1s', `/v1/containers/${SPIN_ID}/processes`, `/v1/containers/${SPIN_ID}/namespaces`]) {
    const res = await a.app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 501, url);
    t.match(res.json(), { title: 'Not implemented', detail: /hybrid cgroup hierarchy.*cgroup v2 only/ });
  }
  const node = await a.app.inject({ method: 'GET', url: '/v1/node' });
  t.equal(node.statusCode, 200);
  t.match(node.json(), { kernelRelease: '4.19.0-27-amd64', cgroup: { version: 'hybrid' }, load: null, pressure: { cpu: null } });
});

t.test('with a runtime: names joined, namespace filter, sandbox from the runtime', async (t) => {
  const ns = (s: number) => BigInt(s) * 1_000_000_000n;
  const fakeNode: FakeNode = {
    pods: [
      { id: SANDBOX_ID, name: 'lab', namespace: 'default', uid: POD_UID, attempt: 0, state: 'SANDBOX_READY', createdAt: ns(1000) },
      { id: GUARANTEED_SANDBOX, name: 'db-0', namespace: 'prod', uid: GUARANTEED_UID, attempt: 0, state: 'SANDBOX_READY', createdAt: ns(1001) },
    ],
    containers: [
      { id: OOM_CHILD_ID, podSandboxId: SANDBOX_ID, name: 'oom-child', attempt: 0, image: 'localhost/lab/busybox:1', state: 'CONTAINER_RUNNING', createdAt: ns(1002) },
      { id: SPIN_ID, podSandboxId: SANDBOX_ID, name: 'spin', attempt: 0, image: 'localhost/lab/busybox:1', state: 'CONTAINER_RUNNING', createdAt: ns(1003) },
      { id: OOM_MAIN_ID, podSandboxId: SANDBOX_ID, name: 'oom-main', attempt: 0, image: 'localhost/lab/busybox:1', state: 'CONTAINER_EXITED', createdAt: ns(1004), exitCode: 137, reason: 'Error' },
      { id: GUARANTEED_ID, podSandboxId: GUARANTEED_SANDBOX, name: 'postgres', attempt: 2, image: 'postgres:16', state: 'CONTAINER_RUNNING', createdAt: ns(1005) },
    ],
    images: [],
  };
  const fake = new FakeCriServer(fakeNode);
  await fake.start();
  // the first call opens the channel: a loaded machine (two cores, other suites) can take a
  // second or more, and the runtime answering is what this test is about
  const a = await testApp(['--host-root', fx.root, '--cri-endpoint', fake.endpoint, '--cri-timeout', '3s']);
  t.teardown(async () => {
    await a.close();
    await fake.stop();
  });
  const aget = (url: string) => a.app.inject({ method: 'GET', url });

  const body = (await aget('/v1/cgroups')).json();
  t.same(body.runtime, { joined: true });
  const by = (id: string | null, kind = 'container') => body.items.find((r: Rec) => r.kind === kind && (kind === 'pod' ? r.podUid === id : r.containerId === id));
  t.match(by(SPIN_ID), { podName: 'lab', podNamespace: 'default', containerName: 'spin', sandbox: false });
  t.match(by(SANDBOX_ID), { podName: 'lab', podNamespace: 'default', containerName: null, sandbox: true });
  t.match(by(POD_UID, 'pod'), { podName: 'lab', podNamespace: 'default', containerName: null, sandbox: null });
  t.match(by(NOCTRL_ID), { podName: null, containerName: null, sandbox: null }, 'unknown to the runtime: IDs only');
  t.equal(fake.calls.ContainerStatus ?? 0, 0, 'names need two list calls, no status calls');

  const prod = (await aget('/v1/cgroups?namespace=prod')).json().items;
  t.same(prod.map((r: Rec) => r.containerId ?? r.podUid).sort(), [GUARANTEED_UID, GUARANTEED_ID, GUARANTEED_SANDBOX].sort());

  const text = await a.app.inject({ method: 'GET', url: `/v1/cgroups/${SPIN_ID}?format=text` });
  t.match(text.body.split('\n')[1], new RegExp(`^container\\s+${POD_UID}\\s+lab\\s+default\\s+${SPIN_ID.slice(0, 13)}\\s+spin\\s+burstable`));

  const dead = await aget(`/v1/cgroups/${OOM_MAIN_ID.slice(0, 10)}`);
  t.equal(dead.statusCode, 404);
  t.match(dead.json().detail, new RegExp(`runtime knows container ${OOM_MAIN_ID} \\(oom-main, CONTAINER_EXITED\\) but its cgroup is gone.*pod UID ${POD_UID}`));

  const nsb = (await aget(`/v1/containers/${SPIN_ID.slice(0, 4)}/namespaces`)).json();
  t.match(nsb.sandbox, { containerId: SANDBOX_ID, pid: 867, source: 'runtime' });

  const thr = (await aget(`/v1/throttling?window=1s&podUid=${POD_UID}`)).json();
  t.match(thr.items.find((e: Rec) => e.containerId === SPIN_ID), { podName: 'lab', containerName: 'spin', podNamespace: 'default' });

  const node = (await aget('/v1/node')).json();
  t.match(node.runtime, { reachable: true, ready: true, conditions: [{ type: 'RuntimeReady', status: true }, { type: 'NetworkReady' }] });

  // A runtime slower than the deadline: cgroups answer with IDs only, without waiting for it.
  // (the fake answers after 10 s: an answer before that cannot have waited for it, however slow the machine)
  fake.delayMs = 10_000;
  const t0 = Date.now();
  const slow = await aget('/v1/cgroups');
  const took = Date.now() - t0;
  t.equal(slow.statusCode, 200);
  t.match(slow.json().runtime, { joined: false, detail: /did not answer within 3 ?s|runtime unavailable/ });
  t.ok(took < fake.delayMs, `answered in ${took} ms, before the runtime's answer`);
  t.equal(slow.json().items.length, 13);
  fake.delayMs = 0;
});
