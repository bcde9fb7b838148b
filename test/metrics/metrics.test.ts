/**
 * /metrics on the captured node's cgroup tree (fixture) with names from a FAKE
 * CRI runtime, with the runtime down, with a kernel log holding the captured OOM
 * reports; promtool checks the real output.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import t from 'tap';
import { NodeMetrics } from '../../src/metrics/node-metrics.js';
import type { MetricsInputs } from '../../src/metrics/inputs.js';
import { capturedRuntime } from '../fixtures/captured-runtime.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { GUARANTEED_UID, NOCTRL_ID, OOM_CHILD_ID, POD_UID, realNode, SANDBOX_ID, SPIN_ID } from '../fixtures/node-tree.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';
import { parseProm, type Sample } from './prom-text.js';

const run = promisify(execFile);

const find = (s: Sample[], name: string, labels: Record<string, string> = {}) =>
  s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
const one = (s: Sample[], name: string, labels: Record<string, string> = {}) => {
  const f = find(s, name, labels);
  if (f.length !== 1) throw new Error(`${f.length} samples of ${name} ${JSON.stringify(labels)}`);
  return f[0]!;
};

const node = realNode('systemd');
const cri = new FakeCriServer(capturedRuntime());
await cri.start();
t.teardown(async () => {
  await cri.stop();
  node.cleanup();
});

const flags = ['--host-root', node.root, '--cri-endpoint', cri.endpoint, '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg'), '--kubelet-healthz', 'http://127.0.0.1:9/healthz', '--node-name', 'node-a'];

t.test('cAdvisor series from the captured cgroups, named by the runtime', async (t) => {
  const agent = await testApp(flags);
  t.teardown(() => agent.close());
  const res = await agent.app.inject({ method: 'GET', url: '/metrics' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  const s = parseProm(res.body);

  const spin = { namespace: 'default', pod: 'lab', container: 'spin', pod_uid: POD_UID };
  const spinWs = one(s, 'container_memory_working_set_bytes', spin);
  t.match(spinWs.labels.id, new RegExp(`^/kubepods\\.slice/kubepods-burstable\\.slice/kubepods-burstable-pod7f3c2a10_1111_4222_8333_944455556666\\.slice/cri-containerd-${SPIN_ID}\\.scope$`));
  t.equal(spinWs.labels.image, 'localhost/nodetruth/busybox:test');
  t.equal(spinWs.value, 0, 'inactive_file above current: floored at 0, as cAdvisor');
  t.equal(one(s, 'container_spec_memory_limit_bytes', spin).value, 67108864);
  t.equal(one(s, 'nodetruth_container_spec_memory_high_bytes', spin).value, 0, 'memory.high "max" (not set): 0, as the limit');
  t.equal(one(s, 'nodetruth_container_memory_high_events_total', spin).value, 0);
  t.same(find(s, 'nodetruth_container_spec_memory_high_bytes').filter((x) => x.labels.id!.includes(NOCTRL_ID)), [], 'no memory controller (no memory.high file): no series');
  t.ok(find(s, 'container_cpu_usage_seconds_total').some((x) => x.labels.id!.includes(NOCTRL_ID)), 'while that cgroup has its cpu series');
  t.equal(one(s, 'container_cpu_usage_seconds_total', spin).value, 1.824308);
  t.equal(one(s, 'container_cpu_usage_seconds_total', spin).labels.cpu, 'total');
  t.equal(one(s, 'container_cpu_cfs_periods_total', spin).value, 169);
  t.equal(one(s, 'container_cpu_cfs_throttled_periods_total', spin).value, 168);
  t.equal(one(s, 'container_cpu_cfs_throttled_seconds_total', spin).value, 14.961853);
  t.equal(one(s, 'container_pressure_cpu_waiting_seconds_total', spin).value, 10.277915);
  t.equal(one(s, 'container_pressure_cpu_stalled_seconds_total', spin).value, 10.260438);

  const child = one(s, 'container_oom_events_total', { container: 'oom-child' });
  t.equal(child.value, 1);
  t.match(child.labels.id, OOM_CHILD_ID);
  const pod = one(s, 'container_oom_events_total', { pod_uid: POD_UID, container: '' });
  t.equal(pod.value, 2, "the pod cgroup's hierarchical memory.events counts the dead oom-main too");
  t.equal(pod.labels.pod, 'lab');
  t.equal(one(s, 'container_spec_memory_limit_bytes', { pod_uid: POD_UID, container: '' }).value, 0, 'unlimited is 0, as cAdvisor');
  t.equal(one(s, 'container_spec_memory_limit_bytes', { container: 'oom-child' }).value, 33554432);

  const sandbox = one(s, 'container_cpu_usage_seconds_total', { container: 'POD', pod_uid: POD_UID });
  t.match(sandbox.labels.id, SANDBOX_ID);
  t.equal(one(s, 'container_spec_memory_limit_bytes', { pod: 'db', container: 'postgres' }).value, 268435456);

  // the hostile symlinked scope leads outside the root: never read
  t.notOk(res.body.includes('777777'), 'no canary value');
  t.notOk(res.body.includes('e5cafe'), 'the symlinked scope is not walked');
});

t.test('nodetruth_ series: runtime, attempts, node, kubelet, kernel OOM kills, CRI calls, process', async (t) => {
  const agent = await testApp(flags);
  t.teardown(() => agent.close());
  const first = parseProm((await agent.app.inject({ method: 'GET', url: '/metrics' })).body);
  const s = parseProm((await agent.app.inject({ method: 'GET', url: '/metrics' })).body);
  t.equal(one(s, 'nodetruth_runtime_up').value, 1);
  t.equal(one(s, 'nodetruth_runtime_ready').value, 1);
  t.equal(one(s, 'nodetruth_network_ready').value, 1);
  t.equal(one(s, 'nodetruth_container_attempt', { pod: 'lab', container: 'spin' }).value, 0);
  t.ok(Math.abs(one(s, 'nodetruth_node_pid_use_ratio').value - 187 / 4194304) < 1e-5, 'threads / pid_max from the fixture');
  t.ok(find(s, 'nodetruth_node_disk_available_ratio', { path: '/' }).length === 1, 'disk ratio of /');
  t.equal(one(s, 'nodetruth_kubelet_healthz_up').value, 0, 'nothing listens on :9');
  for (const k of [first, s]) {
    const ooms = find(k, 'nodetruth_kernel_oom_kills_total');
    t.same(
      ooms.map((o) => [o.labels.namespace, o.labels.pod, o.labels.container, o.labels.pod_uid, o.value]).sort(),
      [
        ['default', 'lab', 'oom-child', POD_UID, 1],
        ['default', 'lab', 'oom-main', POD_UID, 1],
      ],
      'the two captured kills, named by the runtime; the second scrape does not count them again',
    );
  }
  const calls = find(s, 'nodetruth_cri_call_duration_seconds_count');
  t.ok(calls.some((c) => c.labels.method === 'ListContainers' && c.labels.code === 'OK' && c.value >= 1), 'CRI calls of the first scrape observed');
  t.equal(find(s, 'nodetruth_cri_errors_total').length, 0, 'no CRI errors yet');
  t.ok(find(s, 'nodetruth_process_resident_memory_bytes').length === 1, 'agent process metrics under nodetruth_');
  t.same(
    find(s, 'nodetruth_scrape_source_up').map((x) => [x.labels.source, x.value]).sort(),
    [
      ['cgroups', 1],
      ['facts', 1],
      ['kernel', 1],
      ['kubelet', 1],
      ['node', 1],
      ['runtime', 1],
    ],
  );
  t.equal(one(s, 'nodetruth_info').labels.node, 'node-a');
});

t.test('runtime down: every cgroup series still there with pod_uid and id; runtime 0; CRI errors counted', async (t) => {
  const agent = await testApp(['--host-root', node.root, '--cri-endpoint', `unix://${node.root}/run/nothing.sock`, '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg'), '--kubelet-healthz', 'http://127.0.0.1:9/healthz']);
  t.teardown(() => agent.close());
  await agent.app.inject({ method: 'GET', url: '/metrics' });
  const s = parseProm((await agent.app.inject({ method: 'GET', url: '/metrics' })).body);
  t.equal(one(s, 'nodetruth_runtime_up').value, 0);
  t.equal(one(s, 'nodetruth_runtime_ready').value, 0);
  t.equal(one(s, 'nodetruth_scrape_source_up', { source: 'runtime' }).value, 0);
  t.equal(one(s, 'nodetruth_scrape_source_up', { source: 'cgroups' }).value, 1);
  const spin = one(s, 'container_cpu_cfs_throttled_periods_total', { id: `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7f3c2a10_1111_4222_8333_944455556666.slice/cri-containerd-${SPIN_ID}.scope` });
  t.same(spin.labels, { namespace: '', pod: '', container: '', id: spin.labels.id, image: '', pod_uid: POD_UID });
  t.equal(spin.value, 168);
  t.equal(one(s, 'container_oom_events_total', { pod_uid: POD_UID, id: '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7f3c2a10_1111_4222_8333_944455556666.slice' }).value, 2);
  t.ok(find(s, 'nodetruth_cri_errors_total', { code: 'UNAVAILABLE' }).length > 0, 'UNAVAILABLE counted');
  t.same(
    find(s, 'nodetruth_kernel_oom_kills_total').map((o) => [o.labels.pod_uid, o.labels.pod, o.value]),
    [[POD_UID, '', 2]],
    'kills attributed by pod UID alone',
  );
});

t.test('a cgroup v1 host: no cgroup series, the source says why, the rest still answers', async (t) => {
  const { mkdtempSync, rmSync, mkdirSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const path = await import('node:path');
  const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-v1-'));
  for (const c of ['memory', 'cpu', 'pids']) mkdirSync(path.join(root, 'sys/fs/cgroup', c), { recursive: true });
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const agent = await testApp(['--host-root', root, '--kubelet-healthz', 'http://127.0.0.1:9/healthz', '--kmsg-path', path.join(root, 'none')]);
  t.teardown(() => agent.close());
  const res = await agent.app.inject({ method: 'GET', url: '/metrics' });
  t.equal(res.statusCode, 200);
  const s = parseProm(res.body);
  t.equal(find(s, 'container_cpu_usage_seconds_total').length, 0);
  t.equal(one(s, 'nodetruth_scrape_source_up', { source: 'cgroups' }).value, 0);
  t.equal(one(s, 'nodetruth_scrape_source_up', { source: 'kernel' }).value, 0, 'no kernel log there');
  t.equal(one(s, 'nodetruth_runtime_up').value, 0, 'no CRI socket');
});

t.test('bounded: at most N cgroups, pods first; the rest counted; a slow source misses its deadline alone', async (t) => {
  const agent = await testApp(flags);
  t.teardown(() => agent.close());
  // reuse the real inputs of the app, with a cap of 4
  const { defaultInputs } = await import('../../src/metrics/inputs.js');
  const { deadlines } = await import('../../src/deadlines.js');
  const deadlinesMs = deadlines(agent.deps.config);
  const real = defaultInputs(agent.deps);
  const slow: MetricsInputs = { ...real, kubelet: () => new Promise(() => {}) };
  const all = new Set(find(parseProm(await new NodeMetrics(real, { nodeName: 'node-a', deadlinesMs }).metrics()), 'container_cpu_usage_seconds_total').map((x) => x.labels.id)).size;
  t.equal(all, 13, '5 pods and 8 containers in the fixture');
  const m = new NodeMetrics(slow, { nodeName: 'node-a', deadlinesMs, maxCgroupSeries: 4 });
  const t0 = Date.now();
  const s = parseProm(await m.metrics());
  // the kubelet input never answers: the scrape returning at all is the deadline holding
  t.comment(`scrape with a hanging kubelet took ${Date.now() - t0} ms (kubelet deadline 1 s)`);
  const ids = new Set(find(s, 'container_cpu_usage_seconds_total').map((x) => x.labels.id));
  t.equal(ids.size, 4);
  t.ok([...ids].every((id) => !/\.scope$|\/[0-9a-f]{64}$/.test(id ?? '')), 'pods come first');
  t.equal(one(s, 'nodetruth_metrics_cgroups_dropped').value, all - 4);
  t.equal(one(s, 'nodetruth_scrape_source_up', { source: 'kubelet' }).value, 0);
  t.equal(one(s, 'nodetruth_scrape_source_up', { source: 'cgroups' }).value, 1);
  // concurrent scrapes share one computation
  const [a, b] = await Promise.all([m.metrics(), m.metrics()]);
  t.equal(a, b);
  t.equal(find(parseProm(a), 'container_memory_working_set_bytes', { pod_uid: GUARANTEED_UID }).length > 0, true);
});

t.test('the runtime deadline is --cri-timeout: a runtime answering after 2.5 s still names every series', async (t) => {
  // with --cri-timeout 6s, a runtime answering in 2.5 s is inside the scrape's runtime deadline: a
  // fixed 2 s would cut it and every container series would lose namespace, pod and container
  const slow = new FakeCriServer(capturedRuntime());
  slow.delayMs = 2500;
  await slow.start();
  t.teardown(() => slow.stop());
  const agent = await testApp(['--host-root', node.root, '--cri-endpoint', slow.endpoint, '--cri-timeout', '6s', '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg'), '--kubelet-healthz', 'http://127.0.0.1:9/healthz']);
  t.teardown(() => agent.close());
  const s = parseProm((await agent.app.inject({ method: 'GET', url: '/metrics' })).body);
  t.equal(one(s, 'nodetruth_runtime_up').value, 1);
  t.equal(one(s, 'nodetruth_scrape_source_up', { source: 'runtime' }).value, 1);
  const spin = one(s, 'container_cpu_cfs_throttled_periods_total', { container: 'spin' });
  t.same([spin.labels.namespace, spin.labels.pod, spin.labels.pod_uid], ['default', 'lab', POD_UID]);
});

t.test('deadlines: the runtime parts from --cri-timeout, the rest fixed, overrides win', async (t) => {
  const { deadlines } = await import('../../src/deadlines.js');
  const d = deadlines({ criTimeoutMs: 7000 });
  t.equal(d.criCall, 7000);
  t.ok(d.runtimeStatus > 7000 && d.runtimeLists > 7000, "past the call's own deadline, so its own error arrives first");
  t.equal(d.containerRows, 28_000, 'four CRI rounds');
  t.same(deadlines({ criTimeoutMs: 7000 }, { runtimeStatus: 100, kmsgRing: 9000 }), { ...d, runtimeStatus: 100, kmsgRing: 9000 });
  t.equal(deadlines({ criTimeoutMs: 1 }).containerRows, 8000, 'a short --cri-timeout does not shorten the container rows below 8 s');
});

const promtool = '/usr/bin/promtool';
t.test('promtool check metrics accepts the output', { skip: existsSync(promtool) ? false : 'promtool not installed (apt-get install prometheus)' }, async (t) => {
  const agent = await testApp(flags);
  t.teardown(() => agent.close());
  const body = (await agent.app.inject({ method: 'GET', url: '/metrics' })).body;
  const child = execFile(promtool, ['check', 'metrics']);
  const out = new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
  child.stdin!.end(body);
  const r = await out;
  t.equal(r.code, 0, `promtool: ${r.stdout}${r.stderr}`);
  t.equal((r.stdout + r.stderr).trim(), '', 'no lint warnings');
  void run;
});
