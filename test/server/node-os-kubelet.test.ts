/**
 * kubelet's setup through the real HTTP server, on the fixtures of
 * test/fixtures/hosts: --config-dir drop-ins in subdirectories (kubelet walks the
 * directory with filepath.WalkDir), the disks its eviction signals watch where the node
 * keeps them (kubelet --root-dir, containerd's root), /v1/node?format=text naming where
 * each fact came from, and a hostile kubelet command line.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { distroHost, type Distro } from '../fixtures/hosts/index.js';
import { testApp } from '../helpers/app.js';

async function node(distro: Distro, prepare: (root: string) => void, url = '/v1/node') {
  const h = distroHost(distro);
  prepare(h.root);
  const ta = await testApp(['--host-root', h.root]);
  const r = await ta.app.inject({ method: 'GET', url });
  await ta.close();
  h.cleanup();
  return { status: r.statusCode, body: r.body, json: () => r.json(), config: ta.deps.config, root: h.root };
}

const threshold = (b: any, signal: string) => b.facts.eviction.thresholds.find((x: any) => x.signal === signal && x.kind === 'hard');
const write = (root: string, rel: string, text: string) => {
  mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  writeFileSync(path.join(root, rel), text);
};
const DIR = 'etc/kubernetes/kubelet/config.json.d';

t.test('--config-dir: drop-ins in subdirectories, in the order kubelet walks them', async (t) => {
  const r = await node('eks', (root) => {
    write(root, `${DIR}/30-early/99.conf`, '{"evictionHard":{"nodefs.available":"1%"},"maxPods":7}');
    write(root, `${DIR}/50-team/10-x.conf`, '{"evictionHard":{"nodefs.available":"20%"}}');
    write(root, `${DIR}/50-team/notes.txt`, '{"evictionHard":{"nodefs.available":"99%"}}');
    symlinkSync('50-team', path.join(root, DIR, '60-link')); // WalkDir does not descend into a link
    write(root, `${DIR}/${Array.from({ length: 10 }, (_, i) => `d${i}`).join('/')}/deep.conf`, '{"maxPods":1}');
    write(root, `${DIR}/70-cri/cri.conf`, '{"containerRuntimeEndpoint":"unix:///run/other/containerd.sock"}');
    write(root, 'run/other/containerd.sock', '');
  });
  t.equal(r.status, 200);
  const b = r.json();
  t.same(b.facts.eviction.dropIns, [`/${DIR}/30-early/99.conf`, `/${DIR}/40-nodeadm.conf`, `/${DIR}/50-team/10-x.conf`, `/${DIR}/70-cri/cri.conf`]);
  t.match(threshold(b, 'nodefs.available'), { value: '20%', source: `/${DIR}/50-team/10-x.conf` });
  t.match(b.facts.eviction.error, /deeper than 8 directories, not walked/);
  // the endpoint is discovered synchronously at start, from the same walk
  t.equal(r.config.criEndpoint, `unix://${path.join(r.root, 'run/other/containerd.sock')}`);
  t.match(b.facts.nodeOs.criEndpoint, { source: `kubelet config containerRuntimeEndpoint (/${DIR}/70-cri/cri.conf)` });
});

t.test('eviction disks where the node keeps them: containerd --root (k3s), kubelet --root-dir', async (t) => {
  const k3s = await node('k3s', (root) => mkdirSync(path.join(root, 'var/lib/rancher/k3s/agent/containerd'), { recursive: true }));
  const b = k3s.json();
  const image = '/var/lib/rancher/k3s/agent/containerd';
  t.ok(b.disks.some((d: any) => d.path === image && d.present === true), 'the runtime root is among the disks');
  t.ok(b.facts.eviction.checks.filter((c: any) => c.signal.startsWith('imagefs.')).every((c: any) => c.path === image), 'imagefs checked against the runtime root');
  const br = await node('bottlerocket', (root) => {
    const p = path.join(root, 'proc/1155/cmdline');
    writeFileSync(p, readFileSync(p, 'utf8').replace('--root-dir\0/var/lib/kubelet\0', '--root-dir\0/data/kubelet\0'));
    mkdirSync(path.join(root, 'data/kubelet'), { recursive: true });
  });
  const bb = br.json();
  t.match(bb.facts.nodeOs.kubelet.rootDir, { value: '/data/kubelet', source: 'kubelet --root-dir (/proc/1155/cmdline)' });
  t.ok(bb.disks.some((d: any) => d.path === '/data/kubelet'));
  t.ok(bb.facts.eviction.checks.filter((c: any) => c.signal.startsWith('nodefs.')).every((c: any) => c.path === '/data/kubelet'));
});

t.test('/v1/node?format=text names the distribution and where each kubelet fact came from', async (t) => {
  const r = await node('eks', () => {}, '/v1/node?format=text');
  t.equal(r.status, 200);
  t.match(r.body, /distribution +Amazon Linux 2023\.6\.20241212 \(id amzn, from \/etc\/os-release\)/);
  t.match(r.body, /flavor +eks \(from kubelet config \/etc\/kubernetes\/kubelet\/config\.json/);
  t.match(r.body, /kubelet config +\/etc\/kubernetes\/kubelet\/config\.json \(from kubelet --config \(\/proc\/1620\/cmdline\)\)/);
  t.match(r.body, /kubelet drop-in +\/etc\/kubernetes\/kubelet\/config\.json\.d\/40-nodeadm\.conf \(from --config-dir\)/);
  t.match(r.body, /kubelet cert-dir +\/var\/lib\/kubelet\/pki \(from kubelet's default\)/);
  t.match(r.body, /cri endpoint +unix:\/\/.*containerd\.sock \(from kubelet config containerRuntimeEndpoint/);
  t.match(r.body, /containerd config +\/etc\/containerd\/config\.toml/);
});

t.test('a hostile kubelet command line: huge, odd and terminal-sequence arguments', async (t) => {
  const r = await node('eks', (root) => {
    const argv = ['/usr/bin/kubelet', '--config', '--config-dir=relative/dir', '--=x', '---', '-', '--cert-dir=/var/lib/\u001b[2Jpki', `--kubeconfig=/${'k'.repeat(1024 * 1024)}`];
    for (let i = 0; i < 200_000; i++) argv.push(`--x${i}=y`);
    argv.push('--config=/etc/kubernetes/kubelet/config.json');
    writeFileSync(path.join(root, 'proc/1620/cmdline'), argv.map((a) => `${a}\0`).join(''));
  });
  t.equal(r.status, 200, r.status === 200 ? '' : r.body.slice(0, 500));
  const os = r.json().facts.nodeOs;
  t.ok(os.kubelet.kubeconfig === null || os.kubelet.kubeconfig.value.length <= 4096, 'a value is kept to its bound');
  t.match(r.json().warnings.join('\n'), /--config-dir "relative\/dir": not an absolute path, not read/);
  const text = await node('eks', (root) => writeFileSync(path.join(root, 'proc/1620/cmdline'), '/usr/bin/kubelet\0--cert-dir=/var/lib/\u001b[2Jpki\0'), '/v1/node?format=text');
  t.equal(text.status, 200);
  t.notMatch(text.body, /\u001b/, 'no raw escape reaches the terminal');
  t.match(text.body, /kubelet cert-dir +\/var\/lib\/\\x1b\[2Jpki/);
});

t.test("Talos: a kubelet config naming the system containerd's socket is not followed there", async (t) => {
  const r = await node('talos', (root) => {
    const p = path.join(root, 'etc/kubernetes/kubelet.yaml');
    writeFileSync(p, readFileSync(p, 'utf8').replace('unix:///run/containerd/containerd.sock', 'unix:///system/run/containerd/containerd.sock'));
  });
  t.equal(r.status, 200);
  t.equal(r.config.criEndpoint, `unix://${path.join(r.root, 'run/containerd/containerd.sock')}`);
  t.match(r.json().facts.nodeOs.criEndpoint, { source: 'containerd --address (/proc/1020/cmdline)' });
  t.match(r.json().facts.nodeOs.kubelet.containerRuntimeEndpoint, { value: 'unix:///system/run/containerd/containerd.sock' }, 'what kubelet says is still shown');
});

t.test('a drop-in tree of 2,000 directories is walked to its bound and says so', async (t) => {
  const r = await node('eks', (root) => {
    for (let i = 0; i < 2000; i++) write(root, `${DIR}/50-d${String(i).padStart(4, '0')}/x.conf`, '{"maxPods":3}');
  });
  t.equal(r.status, 200);
  const e = r.json().facts.eviction;
  t.match(e.error, /over 256 directories, the rest not walked/);
  t.ok(e.dropIns.length <= 64, `${e.dropIns.length} drop-ins read`);
  t.match(threshold(r.json(), 'nodefs.available'), { value: '15%' }, 'the drop-ins read still apply');
});
