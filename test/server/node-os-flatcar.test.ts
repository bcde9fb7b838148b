/**
 * Flatcar through the real HTTP server: an upgraded node kept on cgroup v1 by Flatcar's
 * post-update step (a containerd drop-in naming config-cgroupfs.toml, systemd's
 * switches on the kernel command line; test/fixtures/hosts/README.md). The agent says
 * which mode it found and what keeps the node there; the cgroup routes answer 501 with
 * that reason, never a 500, and the rest of /v1/node stands.
 */
import t from 'tap';
import { distroHost } from '../fixtures/hosts/index.js';
import { testApp } from '../helpers/app.js';

t.test('Flatcar kept on cgroup v1: /v1/node names it and what keeps it there; cgroup routes 501', async (t) => {
  const h = distroHost('flatcar');
  t.teardown(h.cleanup);
  const ta = await testApp(['--host-root', h.root]);
  t.teardown(() => ta.close());
  const get = (url: string) => ta.app.inject({ method: 'GET', url });

  const n = await get('/v1/node');
  t.equal(n.statusCode, 200, n.statusCode === 200 ? '/v1/node' : n.body);
  const b = n.json();
  t.match(b.cgroup, { version: 'v1', reason: /cgroup v1: \/sys\/fs\/cgroup .*per-controller hierarchies; nodetruth reads cgroup v2 only/ });
  const os = b.facts.nodeOs;
  t.match(os.distribution, { id: 'flatcar', versionId: '4152.2.3', name: 'Flatcar', prettyName: 'Flatcar Container Linux by Kinvolk 4152.2.3 (Oklo)' });
  t.match(os.flavor, { name: 'kubeadm' });
  t.match(os.cgroup.kernelCmdline, { value: 'systemd.unified_cgroup_hierarchy=0 systemd.legacy_systemd_cgroup_controller', source: '/proc/cmdline' });
  t.match(os.containerd, {
    pid: 1201,
    configVersion: 2,
    config: { value: '/usr/share/containerd/config-cgroupfs.toml', source: 'containerd --config (/proc/1201/cmdline), CONTAINERD_CONFIG set by /etc/systemd/system/containerd.service.d/10-use-cgroupfs.conf' },
    cgroupDriver: { value: 'cgroupfs', source: 'runc options SystemdCgroup = false (/usr/share/containerd/config-cgroupfs.toml)' },
    root: { value: '/var/lib/containerd', source: 'root (/usr/share/containerd/config-cgroupfs.toml)' },
  });
  t.match(os.kubelet, {
    pid: 1733,
    config: { value: '/var/lib/kubelet/config.yaml', source: 'kubelet --config (/proc/1733/cmdline)' },
    cgroupDriver: { value: 'cgroupfs', source: 'kubelet config cgroupDriver (/var/lib/kubelet/config.yaml)' },
    rootDir: { value: '/var/lib/kubelet', source: "kubelet's default" },
    containerRuntimeEndpoint: { value: 'unix:///run/containerd/containerd.sock', source: 'kubelet --container-runtime-endpoint (/proc/1733/cmdline)' },
  });
  t.match(b.facts.eviction, { configPath: '/var/lib/kubelet/config.yaml', foundBy: 'cmdline' });

  const text = await get('/v1/node?format=text');
  t.equal(text.statusCode, 200);
  t.match(text.body, /cgroup +v1 +\(cgroup v1: /);
  t.match(text.body, /distribution +Flatcar Container Linux by Kinvolk 4152\.2\.3 \(Oklo\) \(id flatcar, from \/etc\/os-release\)/);
  t.match(text.body, /containerd config +\/usr\/share\/containerd\/config-cgroupfs\.toml \(from containerd --config \(\/proc\/1201\/cmdline\), CONTAINERD_CONFIG set by \/etc\/systemd\/system\/containerd\.service\.d\/10-use-cgroupfs\.conf\)/);
  t.match(text.body, /kernel cgroup switches +systemd\.unified_cgroup_hierarchy=0/);

  for (const url of ['/v1/cgroups', '/v1/throttling?window=1s']) {
    const r = await get(url);
    t.equal(r.statusCode, 501, `${url}: ${r.body}`);
    t.match(r.json(), { code: 'cgroup_mode_unsupported', detail: /cgroup v1: .*boot with systemd\.unified_cgroup_hierarchy=1/ }, url);
  }
  for (const url of ['/v1/triage', '/v1/oom', '/metrics']) {
    const r = await get(url);
    t.not(r.statusCode, 500, `${url}: ${r.statusCode} ${r.body.slice(0, 300)}`);
  }
});
