/**
 * Managed node OSes through the real HTTP server: each host root laid out as the
 * distribution defines it (test/fixtures/hosts/README.md). /v1/node names the
 * distribution and where each kubelet fact came from (drop-ins merged as kubelet merges
 * them); the CRI endpoint is found without --cri-endpoint and never Talos' system
 * containerd; a node without a journal answers /v1/logs from the unit's file and says so.
 */
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { distroHost, type Distro } from '../fixtures/hosts/index.js';
import { testApp } from '../helpers/app.js';

async function node(distro: Distro, prepare?: (root: string) => void, flags: string[] = []) {
  const h = distroHost(distro);
  prepare?.(h.root);
  const ta = await testApp(['--host-root', h.root, ...flags]);
  const r = await ta.app.inject({ method: 'GET', url: '/v1/node' });
  await ta.close();
  h.cleanup();
  return { status: r.statusCode, body: r.json(), config: ta.deps.config, root: h.root };
}

const threshold = (b: any, signal: string, kind = 'hard') => b.facts.eviction.thresholds.find((x: any) => x.signal === signal && x.kind === kind);

t.test('EKS AL2023: config.json and its config.json.d drop-in merged as kubelet merges them', async (t) => {
  const { status, body } = await node('eks');
  t.equal(status, 200);
  const e = body.facts.eviction;
  t.equal(e.configPath, '/etc/kubernetes/kubelet/config.json');
  t.equal(e.foundBy, 'cmdline');
  t.same(e.dropIns, ['/etc/kubernetes/kubelet/config.json.d/40-nodeadm.conf']);
  // the drop-in's nodefs.available wins; the other keys of evictionHard stay from config.json
  t.match(threshold(body, 'nodefs.available'), { value: '15%', ratio: 0.15, source: '/etc/kubernetes/kubelet/config.json.d/40-nodeadm.conf' });
  t.match(threshold(body, 'memory.available'), { value: '100Mi', source: '/etc/kubernetes/kubelet/config.json' });
  t.match(threshold(body, 'nodefs.inodesFree'), { value: '5%', source: '/etc/kubernetes/kubelet/config.json' });
  t.notOk(threshold(body, 'imagefs.available'), 'a base evictionHard leaves the unset defaults unset');
  const os = body.facts.nodeOs;
  t.match(os.distribution, { id: 'amzn', versionId: '2023', prettyName: 'Amazon Linux 2023.6.20241212', source: '/etc/os-release' });
  t.match(os.flavor, { name: 'eks' });
  t.match(os.kubelet, {
    pid: 1620,
    flagsFrom: '/proc/1620/cmdline',
    config: { value: '/etc/kubernetes/kubelet/config.json', source: 'kubelet --config (/proc/1620/cmdline)' },
    configDir: { value: '/etc/kubernetes/kubelet/config.json.d', source: 'kubelet --config-dir (/proc/1620/cmdline)' },
    kubeconfig: { value: '/var/lib/kubelet/kubeconfig' },
    certDir: { value: '/var/lib/kubelet/pki', source: "kubelet's default" },
    containerRuntimeEndpoint: { value: 'unix:///run/containerd/containerd.sock', source: 'kubelet config containerRuntimeEndpoint (/etc/kubernetes/kubelet/config.json)' },
  });
  t.match(os.containerd, { pid: 1490, configVersion: 3, config: { value: '/etc/containerd/config.toml', source: "containerd's default" }, address: { value: '/run/containerd/containerd.sock' }, root: { value: '/var/lib/containerd' } });
  t.match(os.criEndpoint, { source: 'kubelet config containerRuntimeEndpoint (/etc/kubernetes/kubelet/config.json)' });
  t.match(body.facts.certificates[0], { role: 'client', path: '/var/lib/kubelet/pki/kubelet-client-current.pem', source: "--cert-dir /var/lib/kubelet/pki (kubelet's default)" });
});

t.test('EKS: a base config without evictionHard gets the defaults, and the drop-in merges over them', async (t) => {
  const { body } = await node('eks', (root) => {
    const p = path.join(root, 'etc/kubernetes/kubelet/config.json');
    writeFileSync(p, JSON.stringify({ kind: 'KubeletConfiguration', apiVersion: 'kubelet.config.k8s.io/v1beta1', cgroupDriver: 'systemd' }));
  });
  t.match(threshold(body, 'nodefs.available'), { value: '15%', from: 'config', source: /40-nodeadm\.conf$/ });
  t.match(threshold(body, 'imagefs.available'), { value: '15%', from: 'default', source: "kubelet's default" });
  t.match(threshold(body, 'memory.available'), { value: '100Mi', from: 'default' });
});

t.test('Bottlerocket: --flag value forms, the YAML config, the cert dir from the flag', async (t) => {
  const { body, config } = await node('bottlerocket');
  const os = body.facts.nodeOs;
  t.match(os.distribution, { id: 'bottlerocket', versionId: '1.29.0', prettyName: 'Bottlerocket OS 1.29.0 (aws-k8s-1.31)' });
  t.match(os.flavor, { name: 'bottlerocket' });
  t.match(os.kubelet, { config: { value: '/etc/kubernetes/kubelet/config' }, certDir: { value: '/var/lib/kubelet/pki', source: 'kubelet --cert-dir (/proc/1155/cmdline)' }, kubeconfig: { value: '/etc/kubernetes/kubelet/kubeconfig' } });
  t.match(threshold(body, 'memory.available'), { value: '100Mi', source: '/etc/kubernetes/kubelet/config' });
  t.match(os.criEndpoint, { source: 'kubelet --container-runtime-endpoint (/proc/1155/cmdline)' });
  t.match(config.criEndpoint, /\/run\/containerd\/containerd\.sock$/);
});

t.test('GKE COS: /home/kubernetes/kubelet-config.yaml from --config, pid.available', async (t) => {
  const { body } = await node('gke-cos');
  t.match(body.facts.nodeOs.distribution, { id: 'cos', versionId: '117', prettyName: 'Container-Optimized OS from Google' });
  t.match(body.facts.nodeOs.flavor, { name: 'gke' });
  t.equal(body.facts.eviction.configPath, '/home/kubernetes/kubelet-config.yaml');
  t.match(threshold(body, 'pid.available'), { value: '10%', source: '/home/kubernetes/kubelet-config.yaml' });
  t.match(body.facts.nodeOs.kubelet.certDir, { value: '/var/lib/kubelet/pki/' });
});

t.test('AKS: no kubelet process: flags from /etc/default/kubelet, config from the known path, the flag wins', async (t) => {
  const { body } = await node('aks');
  const os = body.facts.nodeOs;
  t.match(os.distribution, { id: 'ubuntu', versionId: '22.04' });
  t.match(os.flavor, { name: 'aks' });
  t.match(os.kubelet, { pid: null, flagsFrom: '/etc/default/kubelet (KUBELET_FLAGS)', config: { value: '/etc/default/kubeletconfig.json', source: 'known path (aks)' } });
  t.equal(body.facts.eviction.foundBy, 'distribution-path');
  // kubelet's flags take precedence over its config file
  t.match(threshold(body, 'memory.available'), { value: '750Mi', source: '--eviction-hard flag' });
  t.match(body.facts.certificates.find((c: any) => c.role === 'serving'), { path: '/etc/kubernetes/certs/kubeletserver.crt', source: 'kubelet --tls-cert-file (/etc/default/kubelet (KUBELET_FLAGS))' });
});

t.test('k3s: the CRI endpoint found without --cri-endpoint, from containerd --address', async (t) => {
  const { body, config, root } = await node('k3s');
  t.equal(config.criEndpoint, `unix://${path.join(root, 'run/k3s/containerd/containerd.sock')}`);
  t.match(body.facts.nodeOs.criEndpoint, { source: 'containerd --address (/proc/955/cmdline)' });
  t.match(body.facts.nodeOs.flavor, { name: 'k3s' });
  t.match(body.facts.nodeOs.containerd, { configVersion: 2, config: { value: '/var/lib/rancher/k3s/agent/etc/containerd/config.toml' }, root: { value: '/var/lib/rancher/k3s/agent/containerd', source: 'containerd --root (/proc/955/cmdline)' } });
  t.equal(body.facts.nodeOs.kubelet.pid, null, 'kubelet runs inside the k3s process');
});

t.test('k3s: given --cri-endpoint, it is used and said so', async (t) => {
  const { body, config } = await node('k3s', undefined, ['--cri-endpoint', 'unix:///tmp/nowhere.sock']);
  t.equal(config.criEndpoint, 'unix:///tmp/nowhere.sock');
  t.match(body.facts.nodeOs.criEndpoint, { value: 'unix:///tmp/nowhere.sock', source: /--cri-endpoint/ });
});

t.test("Talos: the CRI containerd, never the system one, even when it is the only socket", async (t) => {
  const both = distroHost('talos');
  const a = await testApp(['--host-root', both.root]);
  t.equal(a.deps.config.criEndpoint, `unix://${path.join(both.root, 'run/containerd/containerd.sock')}`);
  const n = (await a.app.inject({ method: 'GET', url: '/v1/node' })).json();
  t.match(n.facts.nodeOs, { distribution: { id: 'talos', versionId: 'v1.13.0' }, flavor: { name: 'talos' }, containerd: { pid: 1020, address: { value: '/run/containerd/containerd.sock' } } });
  // kubelet as machined starts it: --config and --cert-dir on its command line, the endpoint in its config
  t.match(n.facts.nodeOs.kubelet, {
    pid: 1410,
    config: { value: '/etc/kubernetes/kubelet.yaml', source: 'kubelet --config (/proc/1410/cmdline)' },
    kubeconfig: { value: '/etc/kubernetes/kubeconfig-kubelet' },
    certDir: { value: '/var/lib/kubelet/pki', source: 'kubelet --cert-dir (/proc/1410/cmdline)' },
    containerRuntimeEndpoint: { value: 'unix:///run/containerd/containerd.sock', source: 'kubelet config containerRuntimeEndpoint (/etc/kubernetes/kubelet.yaml)' },
  });
  t.match(n.facts.nodeOs.criEndpoint, { source: 'kubelet config containerRuntimeEndpoint (/etc/kubernetes/kubelet.yaml)' });
  t.match(n.facts.eviction, { configPath: '/etc/kubernetes/kubelet.yaml', foundBy: 'cmdline' });
  await a.close();
  both.cleanup();
  const onlySystem = distroHost('talos', { withoutSockets: ['/run/containerd/containerd.sock'] });
  const b = await testApp(['--host-root', onlySystem.root]);
  t.equal(b.deps.config.criEndpoint, null, 'no CRI endpoint rather than the system containerd');
  await b.close();
  onlySystem.cleanup();
});

t.test('Talos: no journal: /v1/logs?query=kubelet answers from /var/log/kubelet.log and says so', async (t) => {
  const h = distroHost('talos');
  t.teardown(h.cleanup);
  const ta = await testApp(['--host-root', h.root]);
  t.teardown(() => ta.close());
  const r = await ta.app.inject({ method: 'GET', url: '/v1/logs?query=kubelet&tailLines=2' });
  t.equal(r.statusCode, 200, r.body);
  const b = r.json();
  t.equal(b.source, 'file');
  t.equal(b.file, '/var/log/kubelet.log');
  t.equal(b.lines.length, 2);
  t.match(JSON.parse(b.lines[1]), { msg: 'Error syncing pod, skipping', err: /CrashLoopBackOff/ }, 'kubelet logs JSON lines on Talos');
  t.match(b.warnings[0], /no journal on this node: answered from \/var\/log\/kubelet\.log/);
  const p = await ta.app.inject({ method: 'GET', url: '/v1/logs?query=kubelet&pattern=SyncLoop' });
  t.equal(p.json().lines.length, 1, 'the same pattern parameter');
  const none = await ta.app.inject({ method: 'GET', url: '/v1/logs?query=etcd' });
  t.equal(none.statusCode, 503, none.body);
  t.match(none.json(), { code: 'source_unavailable', detail: /no journal and no log file for etcd .*\/var\/log\/journal, \/run\/log\/journal, \/var\/log\/etcd\.log/ });
  const follow = await ta.app.inject({ method: 'GET', url: '/v1/logs?query=kubelet&follow=true' });
  t.equal(follow.statusCode, 501, follow.body);
});

t.test('Talos: a kubelet.log that is a link out of the host root is refused, not read', async (t) => {
  const h = distroHost('talos');
  t.teardown(h.cleanup);
  const outside = path.join(path.dirname(h.root), 'secret.log');
  writeFileSync(outside, 'SECRET LINE\n');
  const log = path.join(h.root, 'var/log/kubelet.log');
  (await import('node:fs')).rmSync(log);
  symlinkSync(outside, log);
  const ta = await testApp(['--host-root', h.root]);
  t.teardown(() => ta.close());
  const r = await ta.app.inject({ method: 'GET', url: '/v1/logs?query=kubelet' });
  t.equal(r.statusCode, 400, r.body);
  t.notMatch(r.body, /SECRET/);
});

t.test('hostile drop-in directories: 10,000 files, a 100 MB drop-in, a link out of the root', async (t) => {
  const { status, body } = await node('eks', (root) => {
    const dir = path.join(root, 'etc/kubernetes/kubelet/config.json.d');
    for (let i = 0; i < 10_000; i++) writeFileSync(path.join(dir, `50-x${String(i).padStart(5, '0')}.conf`), '{"kind":"KubeletConfiguration"}');
    const big = path.join(dir, '00-big.conf');
    writeFileSync(big, '');
    truncateSync(big, 100 * 1024 * 1024);
    const outside = path.join(path.dirname(root), 'outside.json');
    writeFileSync(outside, '{"evictionHard":{"memory.available":"1Ti"}}');
    symlinkSync(outside, path.join(dir, '01-escape.conf'));
    mkdirSync(path.join(dir, '02-dir.conf'));
  });
  t.equal(status, 200);
  const e = body.facts.eviction;
  t.ok(e.dropIns.length <= 64, `${e.dropIns.length} drop-ins read`);
  t.match(e.error, /drop-ins, only the first 64/);
  t.match(e.error, /00-big\.conf: 104857600 bytes, over the 1048576-byte bound: skipped/);
  t.match(e.error, /01-escape\.conf: absent \(a link to nothing inside the host root\), skipped/);
  t.match(threshold(body, 'memory.available'), { value: '100Mi' }, 'the link out of the root is not applied');
  t.match(body.warnings.join('\n'), /kubelet config: /);
});

t.test('rke2: kubelet configured by flags only: the endpoint and the eviction thresholds from its flags', async (t) => {
  const { body, config, root } = await node('rke2');
  t.equal(config.criEndpoint, `unix://${path.join(root, 'run/k3s/containerd/containerd.sock')}`);
  const os = body.facts.nodeOs;
  t.match(os.criEndpoint, { source: 'kubelet --container-runtime-endpoint (/proc/1240/cmdline)' });
  t.match(os.flavor, { name: 'rke2', evidence: '/var/lib/rancher/rke2/agent/kubelet.kubeconfig' });
  t.match(os.kubelet, { pid: 1240, config: null, kubeconfig: { value: '/var/lib/rancher/rke2/agent/kubelet.kubeconfig' } });
  t.equal(body.facts.eviction.configPath, null);
  t.match(threshold(body, 'imagefs.available'), { value: '5%', source: '--eviction-hard flag' });
  t.notOk(threshold(body, 'memory.available'), 'a flag that sets evictionHard leaves the other defaults unset');
});
