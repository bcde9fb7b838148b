/**
 * The node facts on /metrics, from a host laid out as a real one (test/fixtures/node-facts.ts:
 * a kubelet whose --config names a kubeadm-shaped file, real PEMs behind kubelet's dated link, D and Z
 * processes in a pod, taint and conntrack files), through the real app with a FAKE CRI runtime, and with
 * the runtime down; promtool checks the output.
 */
import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { capturedRuntime } from '../fixtures/captured-runtime.js';
import { DAY, factsHost, NOW } from '../fixtures/node-facts.js';
import { POD_UID } from '../fixtures/node-tree.js';
import { testApp } from '../helpers/app.js';
import { FakeCriServer } from '../helpers/fake-cri.js';
import { parseProm, type Sample } from './prom-text.js';

const fx = await factsHost('systemd');
const cri = new FakeCriServer(capturedRuntime());
await cri.start();
t.teardown(async () => {
  await cri.stop();
  fx.cleanup();
});
const common = ['--host-root', fx.root, '--kmsg-path', '/dev/null', '--kubelet-healthz', 'http://127.0.0.1:9/healthz', '--node-name', 'node-a'];

const values = (s: Sample[], name: string): Array<Record<string, string | number>> =>
  s
    .filter((x) => x.name === name)
    .map((x) => ({ ...x.labels, value: x.value }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

async function scrape(flags: string[]): Promise<{ body: string; s: Sample[] }> {
  const agent = await testApp([...common, ...flags]);
  try {
    const res = await agent.app.inject({ method: 'GET', url: '/metrics' });
    if (res.statusCode !== 200) throw new Error(`/metrics: ${res.statusCode}`);
    return { body: res.body, s: parseProm(res.body) };
  } finally {
    await agent.close();
  }
}

t.test('conntrack, taint, D/Z by pod, certificate expiry, eviction thresholds: named by the runtime', async (t) => {
  const { s } = await scrape(['--cri-endpoint', cri.endpoint]);
  t.same(values(s, 'node_nf_conntrack_entries'), [{ value: 262101 }]);
  t.same(values(s, 'node_nf_conntrack_entries_limit'), [{ value: 262144 }]);
  t.same(values(s, 'nodetruth_kernel_tainted'), [{ value: 16896 }]);
  t.same(values(s, 'nodetruth_kernel_taint_flag'), [
    { bit: '14', letter: 'L', value: 1 },
    { bit: '9', letter: 'W', value: 1 },
  ]);
  // one dd in D state and three unreaped sh in the lab pod; a kernel thread in D outside pods
  t.same(values(s, 'nodetruth_processes'), [
    { state: 'D', namespace: '', pod: '', pod_uid: '', value: 1 },
    { state: 'D', namespace: 'default', pod: 'lab', pod_uid: POD_UID, value: 1 },
    { state: 'Z', namespace: '', pod: '', pod_uid: '', value: 0 },
    { state: 'Z', namespace: 'default', pod: 'lab', pod_uid: POD_UID, value: 3 },
  ]);
  t.same(values(s, 'nodetruth_processes_walk_complete'), [{ value: 1 }]);
  t.same(values(s, 'nodetruth_kubelet_certificate_expiry_seconds'), [
    { certificate: 'client', value: (NOW - 2 * DAY) / 1000 },
    { certificate: 'serving', value: (NOW + 3 * DAY) / 1000 },
  ]);
  const thresholds = values(s, 'nodetruth_kubelet_eviction_threshold');
  t.match(thresholds, [
    { signal: 'memory.available', kind: 'hard', from: 'config', unit: 'quantity', value: 500 * 2 ** 20 },
    { signal: 'nodefs.available', kind: 'hard', from: 'config', unit: 'ratio', value: 0.2 },
    { signal: 'nodefs.available', kind: 'soft', from: 'config', unit: 'ratio', value: 0.3 },
  ]);
  t.notOk(thresholds.some((x) => x.from === 'default'), "evictionHard set in the config: kubelet's defaults are not in force");
  const crossed = values(s, 'nodetruth_kubelet_eviction_threshold_crossed');
  t.same(
    crossed.map((x) => [x.signal, x.kind]),
    [
      ['nodefs.available', 'hard'],
      ['nodefs.available', 'soft'],
    ],
    'each disk threshold checked against its filesystem',
  );
  t.ok(crossed.every((x) => x.value === 0 || x.value === 1));
  t.match(values(s, 'nodetruth_scrape_source_up').find((x) => x.source === 'facts'), { value: 1 });
});

t.test('runtime down: the D/Z series keep pod_uid, lose the names; the rest of the facts stand', async (t) => {
  const { s } = await scrape(['--cri-endpoint', `unix://${fx.root}/run/nothing.sock`]);
  t.same(
    values(s, 'nodetruth_processes').filter((x) => x.pod_uid !== ''),
    [
      { state: 'D', namespace: '', pod: '', pod_uid: POD_UID, value: 1 },
      { state: 'Z', namespace: '', pod: '', pod_uid: POD_UID, value: 3 },
    ],
  );
  t.same(values(s, 'node_nf_conntrack_entries'), [{ value: 262101 }]);
  t.equal(values(s, 'nodetruth_kubelet_certificate_expiry_seconds').length, 2);
  t.match(values(s, 'nodetruth_scrape_source_up').find((x) => x.source === 'facts'), { value: 1 });
});

t.test('no conntrack module, no taint file, no certificates: no series, the source still up', async (t) => {
  const bare = await factsHost('systemd');
  t.teardown(bare.cleanup);
  rmSync(path.join(bare.root, 'proc/sys/net/netfilter'), { recursive: true });
  rmSync(path.join(bare.root, 'proc/sys/kernel/tainted'));
  rmSync(path.join(bare.root, 'var/lib/kubelet/pki'), { recursive: true });
  const agent = await testApp(['--host-root', bare.root, '--kmsg-path', '/dev/null', '--kubelet-healthz', 'http://127.0.0.1:9/healthz', '--cri-endpoint', cri.endpoint]);
  t.teardown(() => agent.close());
  const s = parseProm((await agent.app.inject({ method: 'GET', url: '/metrics' })).body);
  for (const name of ['node_nf_conntrack_entries', 'node_nf_conntrack_entries_limit', 'nodetruth_kernel_tainted', 'nodetruth_kernel_taint_flag', 'nodetruth_kubelet_certificate_expiry_seconds'])
    t.same(values(s, name), [], `${name}: no series`);
  t.equal(values(s, 'nodetruth_processes').length > 0, true, 'the /proc walk still answers');
  t.match(values(s, 'nodetruth_scrape_source_up').find((x) => x.source === 'facts'), { value: 1 });
});

const promtool = '/usr/bin/promtool';
t.test('promtool check metrics accepts the output with the node facts', { skip: existsSync(promtool) ? false : 'promtool not installed (apt-get install prometheus)' }, async (t) => {
  const { body } = await scrape(['--cri-endpoint', cri.endpoint]);
  t.match(body, /^node_nf_conntrack_entries 262101$/m);
  const r = await new Promise<{ code: number; out: string }>((resolve) => {
    const child = execFile(promtool, ['check', 'metrics'], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, out: stdout + stderr }));
    child.stdin!.end(body);
  });
  t.equal(r.code, 0, `promtool: ${r.out}`);
  t.equal(r.out.trim(), '', 'no lint warnings');
});
