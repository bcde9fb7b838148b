/**
 * The pure parsers of kubelet's and containerd's setup on the real shapes the
 * distributions write (test/fixtures/hosts/README.md says where each comes from).
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { flagsFromEnvFile, mergeConfigs, mergePatch, parseFlags } from '../../../src/readers/node/kubelet-flags.js';
import { containerdConfigTop, parseOsRelease } from '../../../src/readers/node/node-os.js';
import { socketHostPath } from '../../../src/readers/cri/endpoint.js';

const fixture = (p: string) => readFileSync(new URL(`../../fixtures/hosts/${p}`, import.meta.url), 'utf8');

t.test('flags: --flag=value, --flag value, booleans, containerd short forms, the last one wins', async (t) => {
  const f = parseFlags(['/usr/bin/kubelet', '--cloud-provider', 'external', '--kubeconfig', '/etc/kubernetes/kubelet/kubeconfig', '--config', '/etc/kubernetes/kubelet/config', '--container-runtime-endpoint=unix:///run/containerd/containerd.sock', '--enable-server', '--v=2', '--config=/last.yaml']);
  t.equal(f.get('kubeconfig')?.value, '/etc/kubernetes/kubelet/kubeconfig');
  t.equal(f.get('container-runtime-endpoint')?.value, 'unix:///run/containerd/containerd.sock');
  t.equal(f.get('enable-server')?.value, 'true');
  t.equal(f.get('config')?.value, '/last.yaml');
  const c = parseFlags(['containerd', '-c', '/var/lib/rancher/k3s/agent/etc/containerd/config.toml', '-a', '/run/k3s/containerd/containerd.sock', '--state', '/run/k3s/containerd', '--root', '/var/lib/rancher/k3s/agent/containerd']);
  t.equal(c.get('config')?.value, '/var/lib/rancher/k3s/agent/etc/containerd/config.toml');
  t.equal(c.get('address')?.value, '/run/k3s/containerd/containerd.sock');
  t.equal(c.get('root')?.value, '/var/lib/rancher/k3s/agent/containerd');
  // a value flag at the end, or followed by another flag, takes no value from it
  t.equal(parseFlags(['kubelet', '--config', '--v=2']).get('config')?.value, 'true');
});

t.test('flags: bounded in args and value length', async (t) => {
  const many = ['kubelet', ...Array.from({ length: 10_000 }, (_, i) => `--x${i}=1`), '--config=/late.yaml'];
  t.notOk(parseFlags(many).has('config'), 'args past the bound are not read');
  t.equal(parseFlags(['kubelet', `--config=/${'a'.repeat(100_000)}`]).get('config')!.value.length, 4096);
});

t.test('AKS /etc/default/kubelet: KUBELET_FLAGS, quoted or not', async (t) => {
  const argv = flagsFromEnvFile(fixture('aks/etc/default/kubelet'), 'KUBELET_FLAGS')!;
  t.equal(parseFlags(argv).get('eviction-hard')?.value, 'memory.available<750Mi,nodefs.available<10%,nodefs.inodesFree<5%');
  t.same(flagsFromEnvFile('KUBELET_FLAGS="--max-pods=110 --v=2"\n', 'KUBELET_FLAGS'), ['kubelet', '--max-pods=110', '--v=2']);
  t.equal(flagsFromEnvFile('# KUBELET_FLAGS=--decoy\nOTHER=1\n', 'KUBELET_FLAGS'), null);
});

t.test('drop-ins: JSON merge patch, mappings key by key, lists replaced, null deletes; sources per signal', async (t) => {
  t.same(mergePatch({ a: { x: 1, y: 2 }, l: [1, 2], k: 1 }, { a: { y: 3 }, l: [9], k: null }), { a: { x: 1, y: 3 }, l: [9] });
  const m = mergeConfigs([
    { file: { path: '/etc/kubernetes/kubelet/config.json', role: 'config', from: '--config' }, text: fixture('eks/etc/kubernetes/kubelet/config.json') },
    { file: { path: '/etc/kubernetes/kubelet/config.json.d/40-nodeadm.conf', role: 'drop-in', from: '--config-dir' }, text: fixture('eks/etc/kubernetes/kubelet/config.json.d/40-nodeadm.conf') },
    { file: { path: '/d/99-broken.conf', role: 'drop-in', from: '--config-dir' }, text: '{ not: [json' },
  ]);
  t.same(m.doc.evictionHard, { 'memory.available': '100Mi', 'nodefs.available': '15%', 'nodefs.inodesFree': '5%' });
  t.equal(m.doc.maxPods, 58);
  t.same(m.doc.clusterDNS, ['10.100.0.10']);
  t.equal(m.sourceOf.get('evictionHard.nodefs.available'), '/etc/kubernetes/kubelet/config.json.d/40-nodeadm.conf');
  t.equal(m.sourceOf.get('evictionHard.memory.available'), '/etc/kubernetes/kubelet/config.json');
  t.ok(m.baseKeys.has('evictionHard'));
  t.equal(m.files.length, 2);
  t.match(m.problems[0], /\/d\/99-broken\.conf: not (YAML|a KubeletConfiguration)/);
});

t.test('os-release of each distribution', async (t) => {
  t.match(parseOsRelease(fixture('eks/etc/os-release')), { ID: 'amzn', VERSION_ID: '2023' });
  t.match(parseOsRelease(fixture('bottlerocket/etc/os-release')), { ID: 'bottlerocket', VERSION_ID: '1.29.0', VARIANT_ID: 'aws-k8s-1.31' });
  t.match(parseOsRelease(fixture('gke-cos/etc/os-release')), { ID: 'cos', BUILD_ID: '18613.164.4' });
  t.match(parseOsRelease(fixture('talos/etc/os-release')), { ID: 'talos', PRETTY_NAME: 'Talos (v1.13.0)' });
});

t.test('containerd config: version 3 (EKS) and version 2 (k3s), the top-level keys the agent uses', async (t) => {
  t.same(containerdConfigTop(fixture('eks/etc/containerd/config.toml')), { version: 3, root: '/var/lib/containerd', address: '/run/containerd/containerd.sock', systemdCgroup: true });
  t.same(containerdConfigTop(fixture('k3s/var/lib/rancher/k3s/agent/etc/containerd/config.toml')), { version: 2, root: null, address: null, systemdCgroup: true });
  // keys of other tables are not taken for the top level
  t.same(containerdConfigTop("[plugins.'x']\nroot = '/nope'\n[grpc]\naddress = \"/run/a.sock\" # comment\n"), { version: null, root: null, address: '/run/a.sock', systemdCgroup: null });
  t.same(containerdConfigTop(fixture('flatcar/usr/share/containerd/config-cgroupfs.toml')), { version: 2, root: '/var/lib/containerd', address: '/run/containerd/containerd.sock', systemdCgroup: false });
  t.equal(containerdConfigTop('[plugins.x.runtimes.kata.options]\nSystemdCgroup = true\n').systemdCgroup, null, 'only the runc runtime counts');
});

t.test('socket paths: unix:// or bare, absolute only', async (t) => {
  t.equal(socketHostPath('unix:///run/k3s/containerd/containerd.sock'), '/run/k3s/containerd/containerd.sock');
  t.equal(socketHostPath('/run/crio/../crio/crio.sock'), '/run/crio/crio.sock');
  t.equal(socketHostPath('npipe:////./pipe/containerd-containerd'), null);
  t.equal(socketHostPath('tcp://10.0.0.1:1234'), null);
});
