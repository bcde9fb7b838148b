// Drives containerd's CRI inside the node guest the way a kubelet does, so the host can
// check what nodetruth reports. Runs with the guest's Node 24, which strips the types
// itself (`node cri-driver.ts setup`): erasable TypeScript only, no local imports.
//
//   setup [--node-faults]
//               run the e2e pods and containers; prints one JSON document (ids, pids).
//               --node-faults adds the pods of the node-failure scenarios (frozen-writer on
//               the loop file system guest/faults.sh loopfs made first, zombies, memory-high)
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
import { randomUUID } from 'node:crypto';
import { mkdirSync, symlinkSync, rmSync } from 'node:fs';
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


async function main(): Promise<void> {
  const [op, arg] = process.argv.slice(2);
  let result: unknown;
  switch (op) {
    case 'setup':
      if (arg !== undefined && arg !== '--node-faults') throw new Error(`setup takes only --node-faults, not ${arg}`);
      result = await setup(arg === '--node-faults');
      break;
    default:
      throw new Error(`unknown operation ${op ?? '(none)'}; use setup [--node-faults]`);
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
