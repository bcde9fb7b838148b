// The dev cluster's node: boots the e2e guest (image.ts, vm.ts), runs the release's kubelet
// in it beside its containerd, and waits until the host's API server reports the node Ready.
// Leaves qemu running (daemonized, its PID in <run dir>/qemu.pid) for scripts/dev-cluster.sh,
// which stops it by that PID on `down`.
//
//   tsx test/e2e/cluster/node.ts up --dir=.dev-cluster --suite=bookworm --bin=<kube bin dir>
//       --api-port=16443 --kubelet-port=10250 --node=node1 [--no-journal]
//
// --no-journal: a node without journald (as Talos): systemd-journald and its sockets are
// masked on the kernel command line, so it never runs in that boot, the image's
// /var/log/journal is removed, and kubelet's output goes to /var/log/kubelet.log. kubelet
// 1.36 has no --log-file (its klog flags are only -v and -vmodule): the service manager
// keeps the file, as kube-log-runner would.
//
// Wiring (restrict=on slirp, nothing else reaches the host):
//   guest -> API server: the guestfwd 10.0.2.100:443 -> host 127.0.0.1:<api port> (vm.ts);
//     the API server's serving cert names 10.0.2.100.
//   API server -> kubelet: the node's Hostname address (its name, the API server's first
//     preferred address type) resolves to 127.0.0.1 in the API server's own /etc/hosts
//     (dev-cluster.sh), and qemu forwards 127.0.0.1:<kubelet port> to the guest's same port.
//   pods -> the `kubernetes` Service (--service-ip, 443): no kube-proxy runs; the node holds
//     that address on lo and socat relays it to the guestfwd above (the API server's serving
//     cert names the service IP), so in-cluster clients (the DaemonSet agent) connect as on
//     any cluster.
//   host -> the DaemonSet's agent (the node's 10.0.2.15:7070): vm.ts's hostfwd from a free
//     host loopback port, written to <dir>/node.json as agentPort.
//   host -> an agent run as a host process on the node's 127.0.0.1:7070 (host-check.ts):
//     guest/control.sh's relay on 10.0.2.15:7071 and vm.ts's hostfwd to it, as relayPort.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AGENT_IMAGE, agentImageArchive } from '../agent-image.js';
import { ensureImage, SUITES, type Suite } from '../image.js';
import { agentImageDisk } from '../oci-uncompress.js';
import { GUEST_API_ADDR, GUEST_API_PORT, NodeVm } from '../vm.js';
import { GiveUp, log, tailFile, waitFor } from '../util.js';

/** Where Debian's containernetworking-plugins installs the plugins (dpkg -L). */
const CNI_BIN_DIR = '/usr/lib/cni';
/** kubelet's default --cert-dir, and the link to its client certificate there */
const KUBELET_CERT_DIR = '/var/lib/kubelet/pki';
const KUBELET_CLIENT_PEM = `${KUBELET_CERT_DIR}/kubelet-client-current.pem`;
/** The pods' network on the node's bridge (no --allocate-node-cidrs: one node). */
const POD_SUBNET = '10.88.0.0/16';

const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    dir: { type: 'string', default: '.dev-cluster' },
    suite: { type: 'string', default: 'bookworm' },
    bin: { type: 'string' },
    'api-port': { type: 'string', default: '16443' },
    'kubelet-port': { type: 'string', default: '10250' },
    node: { type: 'string', default: 'node1' },
    'ready-timeout': { type: 'string', default: '900' },
    'service-ip': { type: 'string', default: '10.96.0.1' },
    'no-journal': { type: 'boolean', default: false },
  },
});

function kubeletConfig(port: number): string {
  return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
port: ${port}
readOnlyPort: 0
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
# containerd 1.x cannot report its cgroup driver; the guests' runc uses systemd's
cgroupDriver: systemd
failSwapOn: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
tlsCertFile: /etc/kubernetes/pki/kubelet-serving.crt
tlsPrivateKeyFile: /etc/kubernetes/pki/kubelet-serving.key
# the images are imported, never pulled: nothing may be collected (containerd 1.6.20
# cannot pin the sandbox image)
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# a TCG guest is ~17x slower than the host
runtimeRequestTimeout: 10m
# a 3 GB guest disk: the default 10 %/15 % thresholds would taint it for disk pressure
evictionHard:
  memory.available: 50Mi
  nodefs.available: 2%
  imagefs.available: 2%
# no DNS reaches the guest (slirp restrict=on)
resolvConf: ""
`;
}

const CNI_CONFLIST = JSON.stringify(
  {
    cniVersion: '1.0.0',
    name: 'nodetruth-dev',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        // ipMasq would need iptables in the guest; pods talk to the node only
        ipMasq: false,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: POD_SUBNET }]], routes: [{ dst: '0.0.0.0/0' }] },
      },
    ],
  },
  null,
  2,
);

/** The journald units a --no-journal node masks at boot. */
const JOURNALD_UNITS = ['systemd-journald.service', 'systemd-journald.socket', 'systemd-journald-dev-log.socket', 'systemd-journald-audit.socket', 'systemd-journal-flush.service'];
/** Where a --no-journal node's kubelet logs (the agent's unit-log fallback, rules/node-os.ts). */
const KUBELET_LOG_FILE = '/var/log/kubelet.log';

/** kubelet's unit: its output to the journal, as kubeadm's unit leaves it, or to `logFile` on a node without one */
const kubeletUnit = (logFile: string | null): string => `[Unit]
Description=kubelet (the dev cluster's node)
Wants=containerd.service
After=containerd.service

[Service]
ExecStart=/usr/local/bin/kubelet --config=/etc/kubernetes/kubelet-config.yaml --kubeconfig=/etc/kubernetes/kubelet.kubeconfig --v=1
Restart=always
RestartSec=2
${logFile ? `StandardOutput=append:${logFile}\nStandardError=append:${logFile}\n` : ''}
[Install]
WantedBy=multi-user.target
`;

/** Installs what node.ts put on the share and starts kubelet; runs in the guest as root. */
const setupScript = (serviceIp: string, noJournal: boolean): string => `set -eu
K=/share/kube
install -d -m 700 /etc/kubernetes/pki
install -m 644 $K/ca.crt $K/kubelet-serving.crt /etc/kubernetes/pki/
install -m 600 $K/kubelet-serving.key /etc/kubernetes/pki/
# the client certificate as kubeadm and kubelet's rotation keep it: certificate and key in one
# dated file in kubelet's --cert-dir, and the link the kubeconfig names
install -d -m 700 ${KUBELET_CERT_DIR}
stamp=$(date -u +%Y-%m-%d-%H-%M-%S)
(umask 077 && cat $K/kubelet.crt $K/kubelet.key > ${KUBELET_CERT_DIR}/kubelet-client-$stamp.pem)
ln -sfn kubelet-client-$stamp.pem ${KUBELET_CLIENT_PEM}
install -m 600 $K/kubelet.kubeconfig /etc/kubernetes/kubelet.kubeconfig
install -m 644 $K/kubelet-config.yaml /etc/kubernetes/kubelet-config.yaml
install -m 755 $K/kubelet /usr/local/bin/kubelet
# containerd looks for CNI plugins in /opt/cni/bin (1.6: bin_dir, 2.x: bin_dirs); Debian's
# package puts them in ${CNI_BIN_DIR}
test -x ${CNI_BIN_DIR}/bridge || { echo "no ${CNI_BIN_DIR}/bridge: is containernetworking-plugins in the image?"; exit 1; }
mkdir -p /opt/cni /etc/cni/net.d
[ -e /opt/cni/bin ] || ln -s ${CNI_BIN_DIR} /opt/cni/bin
install -m 644 $K/10-nodetruth-dev.conflist /etc/cni/net.d/10-nodetruth-dev.conflist
install -m 644 $K/kubelet.service /etc/systemd/system/kubelet.service
swapoff -a || true
${noJournal ? `# no journal on this node: nothing may be left that reads as one
if systemctl is-active -q systemd-journald.service; then echo "systemd-journald runs although masked"; exit 1; fi
rm -rf /var/log/journal /run/log/journal
: > ${KUBELET_LOG_FILE}
` : `# kubelet's journal copied to the share as it is written: the host reads it without a command round trip
systemd-run --unit=kubelet-log-copy --collect sh -c 'exec journalctl -f -n all -o cat -u kubelet.service >>/share/kubelet.log'
`}# the kubernetes Service without kube-proxy: its address on lo, relayed to the API server
ip addr add ${serviceIp}/32 dev lo
systemd-run --unit=kubernetes-service --collect \\
  socat TCP-LISTEN:443,bind=${serviceIp},fork,reuseaddr TCP:${GUEST_API_ADDR}:${GUEST_API_PORT}
systemctl daemon-reload
systemctl start kubelet.service
/usr/local/bin/kubelet --version
ctr -n k8s.io images ls -q
`;

/** kubelet's kubeconfig as kubeadm writes it (kubelet.conf): the client certificate by its path in the cert dir */
function kubeletKubeconfig(server: string, caCrt: string, user: string): string {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  return `apiVersion: v1
kind: Config
clusters:
- name: dev
  cluster:
    server: ${server}
    certificate-authority-data: ${b64(caCrt)}
users:
- name: ${user}
  user:
    client-certificate: ${KUBELET_CLIENT_PEM}
    client-key: ${KUBELET_CLIENT_PEM}
contexts:
- name: dev
  context: {cluster: dev, user: ${user}}
current-context: dev
`;
}

async function up(): Promise<void> {
  const suite = opt.suite as Suite;
  if (!SUITES.includes(suite)) throw new Error(`--suite: one of ${SUITES.join(', ')}`);
  if (!opt.bin) throw new Error('--bin: the directory of the built Kubernetes binaries');
  const dir = resolve(opt.dir!);
  const bin = resolve(opt.bin);
  const apiPort = Number(opt['api-port']);
  const kubeletPort = Number(opt['kubelet-port']);
  const nodeName = opt.node!;
  const pki = join(dir, 'pki');
  const kubectl = (...args: string[]): string =>
    execFileSync(join(bin, 'kubectl'), ['--kubeconfig', join(dir, 'kubeconfig'), ...args], { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });
  const t0 = Date.now();
  const timings: string[] = [];
  const mark = (what: string, since: number): void => {
    timings.push(`${what} ${((Date.now() - since) / 1000).toFixed(1)} s`);
    log(timings.at(-1)!);
  };

  // The agent's image from the working tree (scripts/build-image.sh, cached by its inputs),
  // built beside the guest image.
  const archive = agentImageArchive();
  archive.catch(() => undefined);
  const image = await ensureImage(suite);
  mark(`guest image ${suite} (${image.built ? 'built' : 'cached'})`, t0);
  const { archive: agentArchive, ms: agentMs } = await archive;
  timings.push(`agent image ${AGENT_IMAGE} (scripts/build-image.sh) ${(agentMs / 1000).toFixed(1)} s`);
  log(timings.at(-1)!);

  const runDir = join(dir, 'node');
  rmSync(runDir, { recursive: true, force: true });
  const vm = new NodeVm(image, runDir);
  vm.apiServerPort = apiPort;
  vm.hostForwards = [kubeletPort];
  // the overlay is thrown away on down; containerd's fsyncs need not reach the host's disk
  vm.overlayCache = 'unsafe';
  const noJournal = opt['no-journal'] === true;
  if (noJournal) vm.kernelArgs = JOURNALD_UNITS.map((u) => `systemd.mask=${u}`);

  const share = join(vm.shareDir, 'kube');
  mkdirSync(share, { recursive: true });
  const read = (f: string): string => readFileSync(join(pki, f), 'utf8');
  for (const f of ['ca.crt', 'kubelet.crt', 'kubelet.key', 'kubelet-serving.crt', 'kubelet-serving.key']) copyFileSync(join(pki, f), join(share, f));
  copyFileSync(join(bin, 'kubelet'), join(share, 'kubelet'));
  writeFileSync(
    join(share, 'kubelet.kubeconfig'),
    kubeletKubeconfig(`https://${GUEST_API_ADDR}:${GUEST_API_PORT}`, read('ca.crt'), `system:node:${nodeName}`),
    { mode: 0o600 },
  );
  writeFileSync(join(share, 'kubelet-config.yaml'), kubeletConfig(kubeletPort));
  writeFileSync(join(share, '10-nodetruth-dev.conflist'), CNI_CONFLIST + '\n');
  // with a journal, setupScript copies kubelet's to the share
  const kubeletLog = noJournal ? KUBELET_LOG_FILE : '/share/kubelet.log';
  writeFileSync(join(share, 'kubelet.service'), kubeletUnit(noJournal ? KUBELET_LOG_FILE : null));
  // The agent's image into containerd's k8s.io namespace as every guest gets it:
  // a read-only disk (/dev/vdb) whose blobs guest/control.sh links into the content store
  // before the `ready` stage. The links point into the mounted disk, so it stays attached
  // while qemu runs; dev-cluster.sh removes it on down.
  const tDisk = Date.now();
  const agentDisk = join(runDir, 'agent-image.ext4');
  agentImageDisk(agentArchive, agentDisk, AGENT_IMAGE);
  vm.readonlyDrives = [agentDisk];
  writeFileSync(join(vm.shareDir, 'agent-image.txt'), `disk /dev/vdb ${AGENT_IMAGE}\n`);
  mark('agent image laid out as a disk for the guest', tDisk);

  let ok = false;
  try {
    const tBoot = Date.now();
    await vm.boot();
    mark('guest boot to containerd up and images imported (the agent image included)', tBoot);
    writeFileSync(join(dir, 'node.json'), JSON.stringify({ suite, runDir: vm.runDir, pidFile: vm.pidFile, nodeName, kubeletPort, agentPort: vm.nodePort, relayPort: vm.hostPort, journal: !noJournal, kubeletLog }, null, 1) + '\n');
    const hostname = (await vm.sh('hostname')).trim();
    if (hostname !== nodeName) throw new Error(`the guest's hostname is ${hostname}, not ${nodeName}: kubelet would register another name`);
    const tKubelet = Date.now();
    const out = await vm.sh(setupScript(opt['service-ip']!, noJournal), 300);
    log(`kubelet installed and started:\n${out.trim()}`);
    mark('kubelet installed and started', tKubelet);
    // the binary on the share is no longer needed (84 MB)
    rmSync(join(share, 'kubelet'), { force: true });

    const tReady = Date.now();
    const timeoutMs = Number(opt['ready-timeout']) * 1000;
    let registered = false;
    await waitFor(`node ${nodeName} Ready`, timeoutMs, async () => {
      vm.assertAlive();
      let status = '';
      try {
        status = kubectl('get', 'node', nodeName, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}').trim();
      } catch {
        return undefined; // not registered yet
      }
      if (!registered) {
        registered = true;
        mark(`node ${nodeName} registered after kubelet start`, tReady);
      }
      return status === 'True' ? true : undefined;
    }, 2000).catch(async (err: unknown) => {
      const tail = noJournal ? await vm.sh(`tail -n 30 ${KUBELET_LOG_FILE}`, 60).catch((e: Error) => e.message) : tailFile(join(vm.shareDir, 'kubelet.log'), 30);
      throw new GiveUp(`${err instanceof Error ? err.message : String(err)}\nkubelet log tail (${noJournal ? `the guest's ${KUBELET_LOG_FILE}` : join(vm.shareDir, 'kubelet.log')}):\n${tail}`);
    });
    mark(`node ${nodeName} Ready after kubelet start`, tReady);
    mark('node up in all', t0);
    writeFileSync(join(dir, 'node-timings'), timings.join('\n') + '\n');
    ok = true;
  } finally {
    if (!ok) {
      log(`the node did not come up; its run directory is kept: ${vm.runDir}\n${vm.where()}`);
      await vm.stop();
    }
  }
}

if (positionals[0] !== 'up') {
  console.error('usage: tsx test/e2e/cluster/node.ts up --dir=DIR --suite=bookworm|sid --bin=DIR [--api-port=N --kubelet-port=N --node=NAME --no-journal]');
  process.exit(2);
}
up().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
