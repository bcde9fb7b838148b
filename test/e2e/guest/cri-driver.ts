// Drives containerd's CRI inside the node guest the way a kubelet does, so the host can
// check what nodetruth reports. Runs with the guest's Node 24, which strips the types
// itself (`node cri-driver.ts setup`): erasable TypeScript only, no local imports.
//
//   setup [--node-faults]
//               run the e2e pods and containers; prints one JSON document (ids, pids).
//               --node-faults adds the pods of the node-failure scenarios (frozen-writer on
//               the loop file system guest/faults.sh loopfs made first, zombies, memory-high)
//   status ID   ContainerStatus (verbose) of one container, as JSON
//   remove ID   StopContainer + RemoveContainer
//
// What it mimics from the kubelet (systemd cgroup driver):
//   - pod cgroup parent kubepods-<qos>-pod<uid with _>.slice (guaranteed: kubepods-pod<uid>.slice),
//     which systemd nests under kubepods.slice/kubepods-<qos>.slice;
//   - host network (NamespaceMode NODE) with an empty hostname, pid namespace per
//     container (CONTAINER, i.e. shareProcessNamespace false), ipc per pod;
//   - the kubelet's labels and annotations, log_directory /var/log/pods/<ns>_<name>_<uid>,
//     log_path <container>/<attempt>.log, the directories created beforehand and the
//     /var/log/containers/<pod>_<ns>_<container>-<id>.log symlink afterwards;
//   - CPU and memory limits as linux.resources (shares from requests, quota from limits);
//   - a crash loop: the same container created again with attempt+1 after each exit.
//
//   agent-pod FILE   runs one API pod (test/e2e/kube-pods.ts: what kubectl debug created, or
//                    the DaemonSet's) the way kubelet runs it: see runApiPod below
//   agent-stop ID S  StopContainer with S seconds of grace (kubelet's terminationGracePeriodSeconds)
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const SOCKET = process.env.CRI_ENDPOINT ?? 'unix:///run/containerd/containerd.sock';
const IMAGE = 'localhost/e2e/busybox:1';
const NAMESPACE = 'e2e';
const CALL_DEADLINE_MS = 60_000; // TCG is slow; a real kubelet uses 2 min for most calls
const MiB = 1024 * 1024;

type Qos = 'guaranteed' | 'burstable' | 'besteffort';
type Obj = Record<string, unknown>;
type Unary = (req: Obj, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: Obj) => void) => void;

const here = dirname(fileURLToPath(import.meta.url));
const def = protoLoader.loadSync(join(here, 'cri-write.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
const pkg = grpc.loadPackageDefinition(def) as unknown as { runtime: { v1: Record<string, grpc.ServiceClientConstructor> } };
const RuntimeService = pkg.runtime.v1.RuntimeService!;
const ImageService = pkg.runtime.v1.ImageService!;
const runtime = new RuntimeService(SOCKET, grpc.credentials.createInsecure()) as unknown as Record<string, Unary>;
const images = new ImageService(SOCKET, grpc.credentials.createInsecure()) as unknown as Record<string, Unary>;

function call<T = Obj>(client: Record<string, Unary>, method: string, req: Obj): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = client[method];
    if (!fn) return reject(new Error(`no method ${method}`));
    fn.call(client, req, new grpc.Metadata(), { deadline: Date.now() + CALL_DEADLINE_MS }, (err, res) => {
      if (err) reject(new Error(`${method}: ${err.code} ${err.details}`));
      else resolve(res as T);
    });
  });
}
const rt = <T = Obj>(method: string, req: Obj): Promise<T> => call<T>(runtime, method, req);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const t0 = Date.now();
const note = (msg: string): void => {
  process.stderr.write(`[cri-driver +${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}\n`);
};

async function until<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

// ---- kubelet-like configs ------------------------------------------------------------

interface Pod {
  name: string;
  namespace: string;
  uid: string;
  qos: Qos;
  cgroupParent: string;
  logDirectory: string;
  config: Obj;
  id: string;
}

/**
 * What kubelet's systemd cgroup manager sends: the expanded path of the pod's slice, not
 * its bare name. containerd uses the base name for runc's systemd driver either way, but
 * 2.x loads the sandbox's cgroup by this path for its stats ("invalid group path" otherwise).
 */
function cgroupParentFor(qos: Qos, uid: string): string {
  const u = uid.replaceAll('-', '_');
  return qos === 'guaranteed' ? `/kubepods.slice/kubepods-pod${u}.slice` : `/kubepods.slice/kubepods-${qos}.slice/kubepods-${qos}-pod${u}.slice`;
}

const namespaceOptions = { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' };

async function runPod(name: string, qos: Qos): Promise<Pod> {
  const uid = randomUUID();
  const logDirectory = `/var/log/pods/${NAMESPACE}_${name}_${uid}`;
  const cgroupParent = cgroupParentFor(qos, uid);
  const config: Obj = {
    metadata: { name, uid, namespace: NAMESPACE, attempt: 0 },
    hostname: '', // host network: runc refuses a hostname without a private UTS namespace
    log_directory: logDirectory,
    labels: {
      'io.kubernetes.pod.name': name,
      'io.kubernetes.pod.namespace': NAMESPACE,
      'io.kubernetes.pod.uid': uid,
      app: name,
    },
    annotations: {
      'kubernetes.io/config.source': 'api',
      'kubernetes.io/config.seen': new Date().toISOString(),
    },
    linux: {
      cgroup_parent: cgroupParent,
      security_context: { namespace_options: namespaceOptions },
    },
  };
  mkdirSync(logDirectory, { recursive: true, mode: 0o755 });
  const res = await rt<{ pod_sandbox_id: string }>('RunPodSandbox', { config });
  note(`pod ${name} (${qos}) ${res.pod_sandbox_id.slice(0, 12)} uid ${uid}`);
  return { name, namespace: NAMESPACE, uid, qos, cgroupParent, logDirectory, config, id: res.pod_sandbox_id };
}

interface Limits {
  /** millicores requested (cpu.weight via shares) */
  cpuRequestMilli?: number;
  /** millicores limit (cpu.max quota) */
  cpuLimitMilli?: number;
  memoryLimit?: number;
  /** cgroup v2 files set as they are (LinuxContainerResources.unified), e.g. memory.high */
  unified?: Record<string, string>;
}

interface HostMount {
  containerPath: string;
  hostPath: string;
}

interface Started {
  id: string;
  name: string;
  attempt: number;
  logPath: string;
}

async function createContainer(pod: Pod, name: string, attempt: number, command: string[], limits: Limits, env: Record<string, string> = {}, mounts: HostMount[] = []): Promise<Started> {
  const resources: Obj = { oom_score_adj: pod.qos === 'guaranteed' ? -997 : pod.qos === 'besteffort' ? 1000 : 936 };
  // kubelet: shares = requests * 1024 / 1000 (minimum 2); quota = limit * period / 1000
  resources.cpu_shares = String(limits.cpuRequestMilli ? Math.max(2, Math.floor((limits.cpuRequestMilli * 1024) / 1000)) : 2);
  if (limits.cpuLimitMilli) {
    resources.cpu_period = '100000';
    resources.cpu_quota = String(Math.floor((limits.cpuLimitMilli * 100000) / 1000));
  }
  if (limits.memoryLimit) resources.memory_limit_in_bytes = String(limits.memoryLimit);
  // kubelet on cgroup v2 (SingleProcessOOMKill off) sets memory.oom.group=1 in every application container
  resources.unified = { 'memory.oom.group': '1', ...limits.unified };
  const logPath = `${name}/${attempt}.log`;
  mkdirSync(join(pod.logDirectory, name), { recursive: true, mode: 0o755 });
  const config: Obj = {
    metadata: { name, attempt },
    image: { image: IMAGE },
    command,
    envs: Object.entries({ ...env, ATTEMPT: String(attempt) }).map(([key, value]) => ({ key, value })),
    labels: {
      'io.kubernetes.container.name': name,
      'io.kubernetes.pod.name': pod.name,
      'io.kubernetes.pod.namespace': pod.namespace,
      'io.kubernetes.pod.uid': pod.uid,
    },
    annotations: {
      'io.kubernetes.container.hash': '5a1e2e0f',
      'io.kubernetes.container.restartCount': String(attempt),
      'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': 'File',
      'io.kubernetes.pod.terminationGracePeriod': '30',
    },
    log_path: logPath,
    // a hostPath volume, as kubelet passes it (private propagation)
    mounts: mounts.map((m) => ({ container_path: m.containerPath, host_path: m.hostPath, readonly: false })),
    linux: {
      resources,
      security_context: { namespace_options: namespaceOptions },
    },
  };
  const res = await rt<{ container_id: string }>('CreateContainer', { pod_sandbox_id: pod.id, config, sandbox_config: pod.config });
  const id = res.container_id;
  // kubelet's legacy symlink, what log shippers (and a node without its runtime) read
  const link = `/var/log/containers/${pod.name}_${pod.namespace}_${name}-${id}.log`;
  mkdirSync('/var/log/containers', { recursive: true });
  rmSync(link, { force: true });
  symlinkSync(join(pod.logDirectory, logPath), link);
  await rt('StartContainer', { container_id: id });
  note(`container ${pod.name}/${name} attempt ${attempt}: ${id.slice(0, 12)}`);
  return { id, name, attempt, logPath: join(pod.logDirectory, logPath) };
}

interface Status {
  state: string;
  exit_code: number;
  reason: string;
  message: string;
  started_at: string;
  finished_at: string;
}

async function status(id: string): Promise<{ status: Status; info: Record<string, string> }> {
  return rt('ContainerStatus', { container_id: id, verbose: true });
}

async function waitState(id: string, want: 'CONTAINER_RUNNING' | 'CONTAINER_EXITED', timeoutMs: number): Promise<Status> {
  return until(`${id.slice(0, 12)} ${want}`, timeoutMs, async () => {
    const s = (await status(id)).status;
    if (s.state === want) return s;
    if (want === 'CONTAINER_RUNNING' && s.state === 'CONTAINER_EXITED') throw new Error(`${id} exited (${s.exit_code} ${s.reason}) instead of running`);
    return undefined;
  });
}

async function mainPid(id: string): Promise<number> {
  const info = (await status(id)).info;
  const parsed = JSON.parse(info.info ?? '{}') as { pid?: number };
  return parsed.pid ?? 0;
}

// ---- operations ----------------------------------------------------------------------

async function waitRuntime(): Promise<Obj> {
  const version = await until<Obj>('the CRI to answer', 60_000, async () => {
    try {
      return await rt('Version', { version: 'v1' });
    } catch {
      return undefined;
    }
  });
  await until('RuntimeReady and the e2e images', 60_000, async () => {
    const st = await rt<{ status: { conditions: { type: string; status: boolean }[] } }>('Status', {});
    const ready = st.status.conditions.find((c) => c.type === 'RuntimeReady')?.status === true;
    const imgs = await call<{ images: { repo_tags: string[] }[] }>(images, 'ListImages', {});
    const have = imgs.images.some((i) => i.repo_tags.includes(IMAGE));
    return ready && have ? true : undefined;
  });
  return version;
}

async function setup(nodeFaults: boolean): Promise<Obj> {
  const version = await waitRuntime();
  const out: Obj = { version, pods: {}, containers: {} };
  const pods = out.pods as Record<string, Obj>;
  const containers = out.containers as Record<string, unknown>;
  const podOut = (p: Pod): Obj => ({ id: p.id, name: p.name, namespace: p.namespace, uid: p.uid, qos: p.qos, cgroupParent: p.cgroupParent, logDirectory: p.logDirectory });

  // Long-running ones first, so they have been throttled / logging for a while.
  // 1. spin: a busy loop under a 0.1-core quota
  const spinPod = await runPod('spinner', 'burstable');
  pods.spinner = podOut(spinPod);
  const spin = await createContainer(spinPod, 'spin', 0, ['sh', '-c', 'while :; do :; done'], { cpuRequestMilli: 50, cpuLimitMilli: 100, memoryLimit: 64 * MiB });
  await waitState(spin.id, 'CONTAINER_RUNNING', 30_000);
  containers.spin = { ...spin, pid: await mainPid(spin.id) };

  // 2. web: a guaranteed pod whose container logs a line a second (processes, namespaces, logs)
  const webPod = await runPod('web', 'guaranteed');
  pods.web = podOut(webPod);
  const ticker = await createContainer(
    webPod,
    'ticker',
    0,
    ['sh', '-c', 'i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 1; done'],
    { cpuRequestMilli: 200, cpuLimitMilli: 200, memoryLimit: 64 * MiB },
    { API_TOKEN: 'e2e-secret-value-do-not-show', LOG_LEVEL: 'debug' },
  );
  await waitState(ticker.id, 'CONTAINER_RUNNING', 30_000);
  containers.ticker = { ...ticker, pid: await mainPid(ticker.id) };

  // 3. crash loop: exits 1, created again with attempt + 1, three times
  const crashPod = await runPod('crashloop', 'besteffort');
  pods.crashloop = podOut(crashPod);
  const attempts: Obj[] = [];
  for (let attempt = 0; attempt <= 3; attempt++) {
    const c = await createContainer(crashPod, 'crash', attempt, ['sh', '-c', 'echo "starting attempt $ATTEMPT"; echo "fatal: missing config" >&2; exit 1'], {});
    const s = await waitState(c.id, 'CONTAINER_EXITED', 30_000);
    attempts.push({ ...c, exitCode: s.exit_code, reason: s.reason });
  }
  containers.crash = attempts;

  // 4. OOM: the main process allocates past a 32 MiB limit and is killed by the kernel
  const oomPod = await runPod('oom-victim', 'burstable');
  pods['oom-victim'] = podOut(oomPod);
  const hog = await createContainer(oomPod, 'hog', 0, ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=64M'], { cpuRequestMilli: 100, memoryLimit: 32 * MiB });
  const hs = await waitState(hog.id, 'CONTAINER_EXITED', 60_000);
  containers.hog = { ...hog, exitCode: hs.exit_code, reason: hs.reason };
  if (nodeFaults) await setupNodeFaultPods(pods, containers, podOut);

  out.ms = Date.now() - t0;
  return out;
}

/** The pods of the node-failure scenarios, made for real at scenario time (e2e-host's run.ts, guest/faults.sh). */
async function setupNodeFaultPods(pods: Record<string, Obj>, containers: Record<string, unknown>, podOut: (p: Pod) => Obj): Promise<void> {
  // 5. writers on a hostPath volume (a loop-mounted ext4 that faults.sh loopfs made and the
  //    scenario freezes): four subshells append a line every half second, so each blocks in
  //    D state at its next write once the file system is frozen
  const writerPod = await runPod('frozen-writer', 'besteffort');
  pods['frozen-writer'] = podOut(writerPod);
  const writer = await createContainer(
    writerPod,
    'writer',
    0,
    ['sh', '-c', 'for i in 1 2 3 4; do (while :; do echo "$i" >> /data/w$i; sleep 0.5; done) & done; wait'],
    {},
    {},
    [{ containerPath: '/data', hostPath: '/var/lib/e2e-freeze' }],
  );
  await waitState(writer.id, 'CONTAINER_RUNNING', 30_000);
  containers.writer = { ...writer, pid: await mainPid(writer.id) };

  // 6. zombies: PID 1 starts 12 children and execs into sleep, which never waits for them
  const zombiePod = await runPod('zombies', 'besteffort');
  pods.zombies = podOut(zombiePod);
  const parent = await createContainer(zombiePod, 'parent', 0, ['sh', '-c', 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 1 & done; exec sleep 2147483647'], {});
  await waitState(parent.id, 'CONTAINER_RUNNING', 30_000);
  containers.parent = { ...parent, pid: await mainPid(parent.id) };

  // 7. memory.high: dd after dd faulting in a 24 MiB buffer under memory.high 8 MiB
  //    (memory.max 64 MiB, no swap, so nothing can be reclaimed): each charge past high
  //    counts in memory.events "high" and the kernel makes dd sleep (up to 2 s) before it
  //    returns to user space; never an OOM kill. A new dd each time keeps "high" growing
  //    and costs little CPU (a held buffer would be charged once, then copied freely).
  const highPod = await runPod('memory-high', 'burstable');
  pods['memory-high'] = podOut(highPod);
  const highHog = await createContainer(highPod, 'hog', 0, ['sh', '-c', 'while :; do dd if=/dev/zero of=/dev/null bs=24M count=4 2>/dev/null; done'], {
    cpuRequestMilli: 100,
    memoryLimit: 64 * MiB,
    unified: { 'memory.high': String(8 * MiB) },
  });
  await waitState(highHog.id, 'CONTAINER_RUNNING', 30_000);
  containers.highHog = { ...highHog, pid: await mainPid(highHog.id) };
}


// ---- one API pod, as kubelet runs it ------------------------------------------------
// The pod JSON is what the API server holds (test/e2e/kube-pods.ts). Facts about the
// cluster come from /share/kube: facts.json {nodeIP, apiHost, apiPort}, ca.crt, token.
// What kubelet does and this does too: QoS from the resources; the sandbox in the host's
// network/PID/IPC namespaces (NamespaceMode NODE) when hostNetwork/hostPID/hostIPC,
// privileged when a container is; hostPath volumes mounted as given, emptyDir (Memory: a
// tmpfs of sizeLimit) and secret volumes (optional and missing: an empty tmpfs) under
// /var/lib/kubelet/pods/<uid>/volumes; the service account's projected token
// (kube-api-access) at /var/run/secrets/kubernetes.io/serviceaccount; /etc/hosts and the
// termination-log file; readOnly → readonly, mountPropagation None → PRIVATE,
// recursiveReadOnly IfPossible → recursive_read_only only where the runtime handler
// reports recursive_read_only_mounts (Status features); env from value, fieldRef
// (spec.nodeName, status.podIP, status.hostIP, metadata.*) and the kubernetes service's
// variables (enableServiceLinks), $(VAR) expanded in env values, command and args;
// CPU shares/quota and memory limit; oom_score_adj by QoS; probes run from the host.

type ApiPod = { metadata: { name: string; namespace: string; uid: string; labels?: Record<string, string>; annotations?: Record<string, string> }; spec: any };
type Facts = { nodeIP: string; apiHost: string; apiPort: string };

function quantityMilli(q: unknown): number {
  const s = String(q ?? '');
  if (!s) return 0;
  return s.endsWith('m') ? Number(s.slice(0, -1)) : Number(s) * 1000;
}
function quantityBytes(q: unknown): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q ?? ''));
  if (!m) return 0;
  const mult: Record<string, number> = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
  return Math.floor(Number(m[1]) * (m[2] ? mult[m[2]]! : 1));
}

function qosOf(containers: any[]): Qos {
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const req = c.resources?.requests ?? {};
    const lim = c.resources?.limits ?? {};
    if (Object.keys(req).length || Object.keys(lim).length) any = true;
    for (const r of ['cpu', 'memory']) {
      if (!lim[r] || (req[r] !== undefined && req[r] !== lim[r])) guaranteed = false;
    }
  }
  return !any ? 'besteffort' : guaranteed ? 'guaranteed' : 'burstable';
}

/** $(VAR) from the map; $$(VAR) stays literal; unknown references stay as written (kubelet's rules). */
function expand(s: string, vars: Record<string, string>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) => (m === '$$' ? '$' : name !== undefined && name in vars ? vars[name]! : m));
}

function fieldRef(path: string, pod: ApiPod, facts: Facts): string {
  switch (path) {
    case 'spec.nodeName': return pod.spec.nodeName ?? '';
    case 'status.podIP': return pod.spec.hostNetwork ? facts.nodeIP : '';
    case 'status.hostIP': return facts.nodeIP;
    case 'metadata.name': return pod.metadata.name;
    case 'metadata.namespace': return pod.metadata.namespace;
    case 'metadata.uid': return pod.metadata.uid;
    case 'spec.serviceAccountName': return pod.spec.serviceAccountName || 'default';
    default: throw new Error(`fieldRef ${path} is not supported by this stand-in`);
  }
}

function mount(args: string[]): void {
  execFileSync('mount', args, { stdio: 'pipe' });
}

async function runApiPod(file: string): Promise<Obj> {
  const pod = JSON.parse(readFileSync(file, 'utf8')) as ApiPod;
  const facts = JSON.parse(readFileSync('/share/kube/facts.json', 'utf8')) as Facts;
  const { name, namespace, uid } = pod.metadata;
  const spec = pod.spec;
  if (spec.containers.length !== 1) throw new Error('this stand-in runs pods of one container');
  const c = spec.containers[0];
  const qos = qosOf(spec.containers);
  const podDir = `/var/lib/kubelet/pods/${uid}`;
  const st = await rt<{ runtime_handlers: { name: string; features: { recursive_read_only_mounts: boolean } | null }[] }>('Status', { verbose: false });
  const handler = st.runtime_handlers.find((h) => h.name === '') ?? st.runtime_handlers.find((h) => h.name === 'runc');
  const rroSupported = handler?.features?.recursive_read_only_mounts === true;

  // volumes
  const volumePaths: Record<string, string> = {};
  for (const v of spec.volumes ?? []) {
    if (v.hostPath) {
      if (v.hostPath.type === 'Directory' && !existsSync(v.hostPath.path)) throw new Error(`hostPath ${v.hostPath.path} is not a directory`);
      volumePaths[v.name] = v.hostPath.path;
    } else if (v.emptyDir) {
      const d = `${podDir}/volumes/kubernetes.io~empty-dir/${v.name}`;
      mkdirSync(d, { recursive: true });
      if (v.emptyDir.medium === 'Memory') mount(['-t', 'tmpfs', '-o', `size=${quantityBytes(v.emptyDir.sizeLimit) || 64 * MiB}`, 'tmpfs', d]);
      volumePaths[v.name] = d;
    } else if (v.secret) {
      const d = `${podDir}/volumes/kubernetes.io~secret/${v.name}`;
      mkdirSync(d, { recursive: true });
      mount(['-t', 'tmpfs', '-o', 'size=1M', 'tmpfs', d]);
      // no Secret in this cluster: `optional: true` makes kubelet mount it empty
      if (!v.secret.optional) throw new Error(`secret ${v.secret.secretName} does not exist and is not optional`);
      volumePaths[v.name] = d;
    } else throw new Error(`volume ${v.name}: only hostPath, emptyDir and secret are supported here`);
  }
  const mounts: Obj[] = [];
  for (const m of c.volumeMounts ?? []) {
    const host = volumePaths[m.name];
    if (!host) throw new Error(`volumeMount ${m.name} has no volume`);
    const propagation = m.mountPropagation === 'HostToContainer' ? 'PROPAGATION_HOST_TO_CONTAINER' : m.mountPropagation === 'Bidirectional' ? 'PROPAGATION_BIDIRECTIONAL' : 'PROPAGATION_PRIVATE';
    const rro = m.readOnly === true && propagation === 'PROPAGATION_PRIVATE' && (m.recursiveReadOnly === 'Enabled' || (m.recursiveReadOnly === 'IfPossible' && rroSupported));
    if (m.recursiveReadOnly === 'Enabled' && !rroSupported) throw new Error('recursiveReadOnly Enabled but the runtime does not support it');
    mounts.push({ container_path: m.mountPath, host_path: host, readonly: m.readOnly === true, propagation, recursive_read_only: rro });
  }
  // the ServiceAccount admission plugin's kube-api-access volume, as kubelet lays it out
  if (spec.automountServiceAccountToken !== false) {
    const d = `${podDir}/volumes/kubernetes.io~projected/kube-api-access-e2e`;
    mkdirSync(d, { recursive: true });
    mount(['-t', 'tmpfs', '-o', 'size=1M', 'tmpfs', d]);
    copyFileSync('/share/kube/token', `${d}/token`);
    copyFileSync('/share/kube/ca.crt', `${d}/ca.crt`);
    writeFileSync(`${d}/namespace`, namespace);
    mounts.push({ container_path: '/var/run/secrets/kubernetes.io/serviceaccount', host_path: d, readonly: true, propagation: 'PROPAGATION_PRIVATE' });
  }
  // /etc/hosts (a host-network pod gets the node's) and the termination-log file
  mkdirSync(`${podDir}/containers/${c.name}`, { recursive: true });
  copyFileSync('/etc/hosts', `${podDir}/etc-hosts`);
  mounts.push({ container_path: '/etc/hosts', host_path: `${podDir}/etc-hosts`, readonly: false, propagation: 'PROPAGATION_PRIVATE' });
  const termLog = `${podDir}/containers/${c.name}/e2e0001`;
  writeFileSync(termLog, '');
  mounts.push({ container_path: c.terminationMessagePath || '/dev/termination-log', host_path: termLog, readonly: false, propagation: 'PROPAGATION_PRIVATE' });

  // env: the kubernetes service's variables first, then the container's, in order
  const vars: Record<string, string> = {};
  {
    // the `kubernetes` service's variables are injected whatever enableServiceLinks says
    Object.assign(vars, {
      KUBERNETES_SERVICE_HOST: facts.apiHost,
      KUBERNETES_SERVICE_PORT: facts.apiPort,
      KUBERNETES_SERVICE_PORT_HTTPS: facts.apiPort,
      KUBERNETES_PORT: `tcp://${facts.apiHost}:${facts.apiPort}`,
      [`KUBERNETES_PORT_${facts.apiPort}_TCP`]: `tcp://${facts.apiHost}:${facts.apiPort}`,
      [`KUBERNETES_PORT_${facts.apiPort}_TCP_PROTO`]: 'tcp',
      [`KUBERNETES_PORT_${facts.apiPort}_TCP_PORT`]: facts.apiPort,
      [`KUBERNETES_PORT_${facts.apiPort}_TCP_ADDR`]: facts.apiHost,
    });
  }
  for (const e of c.env ?? []) {
    vars[e.name] = e.valueFrom?.fieldRef ? fieldRef(e.valueFrom.fieldRef.fieldPath, pod, facts) : expand(e.value ?? '', vars);
  }
  const command = (c.command ?? []).map((x: string) => expand(x, vars));
  const args = (c.args ?? []).map((x: string) => expand(x, vars));

  // resources, as kubelet turns them into linux resources
  const req = c.resources?.requests ?? {};
  const lim = c.resources?.limits ?? {};
  const resources: Obj = {};
  const cpuReq = quantityMilli(req.cpu ?? lim.cpu);
  resources.cpu_shares = String(cpuReq ? Math.max(2, Math.floor((cpuReq * 1024) / 1000)) : 2);
  if (lim.cpu) {
    resources.cpu_period = '100000';
    resources.cpu_quota = String(Math.floor((quantityMilli(lim.cpu) * 100000) / 1000));
  }
  if (lim.memory) resources.memory_limit_in_bytes = String(quantityBytes(lim.memory));
  const memTotal = Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) * 1024;
  const memReq = quantityBytes(req.memory ?? lim.memory);
  resources.oom_score_adj = String(qos === 'guaranteed' ? -997 : qos === 'besteffort' ? 1000 : Math.min(999, Math.max(2, 1000 - Math.floor((1000 * memReq) / memTotal))));

  const privileged = spec.containers.some((x: any) => x.securityContext?.privileged === true);
  const nsOpts = { network: spec.hostNetwork ? 'NODE' : 'POD', pid: spec.hostPID ? 'NODE' : spec.shareProcessNamespace ? 'POD' : 'CONTAINER', ipc: spec.hostIPC ? 'NODE' : 'POD' };
  const cgroupParent = cgroupParentFor(qos, uid);
  const logDirectory = `/var/log/pods/${namespace}_${name}_${uid}`;
  mkdirSync(`${logDirectory}/${c.name}`, { recursive: true, mode: 0o755 });
  const sandboxConfig: Obj = {
    metadata: { name, uid, namespace, attempt: 0 },
    hostname: spec.hostNetwork ? '' : name,
    log_directory: logDirectory,
    labels: { ...(pod.metadata.labels ?? {}), 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': namespace, 'io.kubernetes.pod.uid': uid },
    annotations: { ...(pod.metadata.annotations ?? {}), 'kubernetes.io/config.source': 'api', 'kubernetes.io/config.seen': new Date().toISOString() },
    linux: {
      cgroup_parent: cgroupParent,
      security_context: { namespace_options: nsOpts, privileged },
    },
  };
  const sandbox = await rt<{ pod_sandbox_id: string }>('RunPodSandbox', { config: sandboxConfig });
  note(`api pod ${namespace}/${name} (${qos}) ${sandbox.pod_sandbox_id.slice(0, 12)} rro=${rroSupported}`);
  const sc = c.securityContext ?? {};
  const config: Obj = {
    metadata: { name: c.name, attempt: 0 },
    image: { image: c.image },
    command,
    args,
    working_dir: c.workingDir ?? '',
    envs: Object.entries(vars).map(([key, value]) => ({ key, value })),
    mounts,
    labels: { 'io.kubernetes.container.name': c.name, 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': namespace, 'io.kubernetes.pod.uid': uid },
    annotations: {
      'io.kubernetes.container.hash': '6e2e0001',
      'io.kubernetes.container.restartCount': '0',
      'io.kubernetes.container.terminationMessagePath': c.terminationMessagePath || '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': c.terminationMessagePolicy || 'File',
      'io.kubernetes.pod.terminationGracePeriod': String(spec.terminationGracePeriodSeconds ?? 30),
    },
    log_path: `${c.name}/0.log`,
    stdin: c.stdin === true,
    tty: c.tty === true,
    linux: {
      resources,
      security_context: {
        privileged: sc.privileged === true,
        namespace_options: nsOpts,
        readonly_rootfs: sc.readOnlyRootFilesystem === true,
        ...(sc.runAsUser !== undefined ? { run_as_user: { value: String(sc.runAsUser) } } : {}),
      },
    },
  };
  const created = await rt<{ container_id: string }>('CreateContainer', { pod_sandbox_id: sandbox.pod_sandbox_id, config, sandbox_config: sandboxConfig });
  const id = created.container_id;
  const link = `/var/log/containers/${name}_${namespace}_${c.name}-${id}.log`;
  mkdirSync('/var/log/containers', { recursive: true });
  rmSync(link, { force: true });
  symlinkSync(`${logDirectory}/${c.name}/0.log`, link);
  await rt('StartContainer', { container_id: id });
  note(`api pod container ${c.name}: ${id.slice(0, 12)}`);
  const pid = await mainPid(id);
  return {
    pod: { id: sandbox.pod_sandbox_id, name, namespace, uid, qos, cgroupParent, logDirectory },
    container: { id, name: c.name, pid, command, args, mounts, envNames: Object.keys(vars), rroSupported },
  };
}

/** One probe attempt as kubelet's prober makes it (from the node; https without verification). */
function probeOnce(pod: ApiPod, probe: any, facts: Facts): Promise<{ ok: boolean; detail: string }> {
  const g = probe.httpGet;
  if (!g) return Promise.resolve({ ok: false, detail: 'only httpGet probes are run by this stand-in' });
  const c = pod.spec.containers[0];
  const port = typeof g.port === 'number' ? g.port : (c.ports ?? []).find((p: any) => p.name === g.port)?.containerPort;
  const host = g.host || (pod.spec.hostNetwork ? facts.nodeIP : '');
  const https = (g.scheme || 'HTTP') === 'HTTPS';
  const timeoutMs = (probe.timeoutSeconds || 1) * 1000;
  return new Promise((resolve) => {
    const req = (https ? httpsRequest : httpRequest)(
      { host, port, path: g.path || '/', method: 'GET', timeout: timeoutMs, rejectUnauthorized: false, headers: { 'user-agent': 'kube-probe/1.32', accept: '*/*' } },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve({ ok: code >= 200 && code < 400, detail: `HTTP ${code}` });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', (e) => resolve({ ok: false, detail: e.message }));
    req.end();
  });
}

/** Probes until the first success (readiness: successThreshold 1) or `budgetMs`; each attempt's outcome is kept. */
async function probeUntilReady(file: string, which: 'readinessProbe' | 'livenessProbe', budgetMs: number): Promise<Obj> {
  const pod = JSON.parse(readFileSync(file, 'utf8')) as ApiPod;
  const facts = JSON.parse(readFileSync('/share/kube/facts.json', 'utf8')) as Facts;
  const probe = pod.spec.containers[0][which];
  if (!probe) return { probe: which, present: false };
  const started = Date.now();
  const attempts: string[] = [];
  await sleep((probe.initialDelaySeconds ?? 0) * 1000);
  for (;;) {
    const r = await probeOnce(pod, probe, facts);
    attempts.push(r.detail);
    if (r.ok) return { probe: which, present: true, ok: true, attempts: attempts.length, last: r.detail, ms: Date.now() - started, failures: attempts.filter((a) => !a.startsWith('HTTP 2')).slice(-3) };
    if (Date.now() - started > budgetMs) return { probe: which, present: true, ok: false, attempts: attempts.length, last: r.detail, ms: Date.now() - started };
    await sleep((probe.periodSeconds || 10) * 1000);
  }
}

async function stopAgent(id: string, graceSec: number): Promise<Obj> {
  const started = Date.now();
  await rt('StopContainer', { container_id: id, timeout: String(graceSec) });
  const s = await waitState(id, 'CONTAINER_EXITED', (graceSec + 30) * 1000);
  return { id, stopMs: Date.now() - started, exitCode: s.exit_code, reason: s.reason, message: s.message };
}

async function main(): Promise<void> {
  const [op, arg] = process.argv.slice(2);
  let result: unknown;
  switch (op) {
    case 'setup':
      if (arg !== undefined && arg !== '--node-faults') throw new Error(`setup takes only --node-faults, not ${arg}`);
      result = await setup(arg === '--node-faults');
      break;
    case 'status':
      if (!arg) throw new Error('status needs a container id');
      result = await status(arg);
      break;
    case 'remove':
      if (!arg) throw new Error('remove needs a container id');
      await rt('StopContainer', { container_id: arg, timeout: '10' });
      await rt('RemoveContainer', { container_id: arg });
      result = { removed: arg };
      break;
    case 'ready':
      result = await waitRuntime();
      break;
    case 'agent-pod':
      if (!arg) throw new Error('agent-pod needs a pod JSON file');
      result = await runApiPod(arg);
      break;
    case 'probe': {
      const [, file, which, budget] = process.argv.slice(2);
      if (!file) throw new Error('probe needs a pod JSON file');
      result = await probeUntilReady(file, which === 'liveness' ? 'livenessProbe' : 'readinessProbe', Number(budget ?? 300) * 1000);
      break;
    }
    case 'agent-stop': {
      const grace = Number(process.argv[4] ?? 30);
      if (!arg) throw new Error('agent-stop needs a container id');
      result = await stopAgent(arg, grace);
      break;
    }
    default:
      throw new Error(`unknown operation ${op ?? '(none)'}; use setup [--node-faults] | status ID | remove ID | ready | agent-pod FILE | probe FILE readiness|liveness SECONDS | agent-stop ID GRACE`);
  }
  process.stdout.write(JSON.stringify(result) + '\n');
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`cri-driver: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
