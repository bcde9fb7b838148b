/**
 * FAKE CRI runtime: a grpc-js server speaking our runtime.v1 proto on a unix
 * socket, serving pods and containers from memory. It exists only for what a
 * read-only real containerd cannot show on this machine (running and exited
 * containers with attempts and exit codes, verbose info whose env holds
 * secrets) and for node-scale figures (a 1,000-container node). Its messages
 * follow the shapes containerd 1.6 sends (see shared/captures/cri/).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CRI_PROTO_PATH, PROTO_OPTIONS } from '../../src/readers/cri/proto.js';

export interface FakeContainer {
  id: string;
  podSandboxId: string;
  name: string;
  attempt: number;
  image: string;
  state: 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';
  createdAt: bigint;
  startedAt?: bigint;
  finishedAt?: bigint;
  exitCode?: number;
  reason?: string;
  pid?: number;
  env?: Record<string, string>;
  args?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  logPath?: string;
  cgroupsPath?: string;
}

export interface FakePod {
  id: string;
  name: string;
  namespace: string;
  uid: string;
  attempt: number;
  state: 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
  createdAt: bigint;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface FakeImage {
  id: string;
  repoTags: string[];
  size: number;
}

export interface FakeNode {
  pods: FakePod[];
  containers: FakeContainer[];
  images: FakeImage[];
}

/** Counters of calls per method, so tests can see what the agent asked. */
export type CallCounts = Record<string, number>;

export class FakeCriServer {
  readonly node: FakeNode;
  readonly calls: CallCounts = {};
  readonly dir: string;
  readonly socket: string;
  private readonly server = new grpc.Server();
  /** Milliseconds every call waits before answering; set to exceed a deadline. */
  delayMs = 0;
  /** Container ids whose ContainerStatus fails with INTERNAL (one bad item in a list). */
  readonly failStatus = new Set<string>();
  /**
   * Status beyond its two ready conditions, as the wire carries it (camelCase; a feature
   * message present, even empty, or absent). Unset fields answer as containerd 1.6 does:
   * no runtime handlers, no features, empty info. containerd21Status() in
   * test/fixtures/cri/containerd-2.1-status.ts is containerd 2.1's.
   */
  statusReply: { status?: unknown; info?: Record<string, string>; runtimeHandlers?: unknown[]; features?: unknown } = {};

  constructor(node: FakeNode) {
    this.node = node;
    this.dir = mkdtempSync(join(tmpdir(), 'nodetruth-fake-cri-'));
    this.socket = join(this.dir, 'fake-cri.sock');
    const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(CRI_PROTO_PATH, PROTO_OPTIONS)) as unknown as {
      runtime: { v1: { RuntimeService: grpc.ServiceClientConstructor; ImageService: grpc.ServiceClientConstructor } };
    };
    this.server.addService(pkg.runtime.v1.RuntimeService.service, this.wrap(this.runtimeHandlers()));
    this.server.addService(pkg.runtime.v1.ImageService.service, this.wrap(this.imageHandlers()));
  }

  get endpoint(): string {
    return `unix://${this.socket}`;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) =>
      this.server.bindAsync(`unix:${this.socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    this.server.forceShutdown();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private wrap(handlers: Record<string, (req: any) => unknown>): grpc.UntypedServiceImplementation {
    const out: grpc.UntypedServiceImplementation = {};
    for (const [name, fn] of Object.entries(handlers)) {
      out[name] = (call: grpc.ServerUnaryCall<any, any>, callback: grpc.sendUnaryData<any>) => {
        this.calls[name] = (this.calls[name] ?? 0) + 1;
        const answer = () => {
          try {
            callback(null, fn(call.request));
          } catch (err) {
            callback(err as grpc.ServiceError);
          }
        };
        if (this.delayMs > 0) setTimeout(answer, this.delayMs);
        else answer();
      };
    }
    return out;
  }

  private runtimeHandlers(): Record<string, (req: any) => unknown> {
    const node = this.node;
    const notFound = (what: string) => Object.assign(new Error(`${what} not found`), { code: grpc.status.NOT_FOUND, details: `an error occurred when try to find ${what}: not found` });
    return {
      Version: () => ({ version: '0.1.0', runtimeName: 'fake-cri', runtimeVersion: '0.0.0-fake', runtimeApiVersion: 'v1' }),
      Status: (req) => ({
        status: this.statusReply.status ?? {
          conditions: [
            { type: 'RuntimeReady', status: true, reason: '', message: '' },
            { type: 'NetworkReady', status: true, reason: '', message: '' },
          ],
        },
        // containerd fills info only when asked for verbose
        info: req.verbose ? (this.statusReply.info ?? {}) : {},
        runtimeHandlers: this.statusReply.runtimeHandlers ?? [],
        ...(this.statusReply.features === undefined ? {} : { features: this.statusReply.features }),
      }),
      ListPodSandbox: (req) => ({
        items: node.pods
          .filter((p) => !req.filter?.id || p.id === req.filter.id)
          .filter((p) => !req.filter?.state || p.state === req.filter.state.state)
          .map((p) => podWire(p)),
      }),
      PodSandboxStatus: (req) => {
        const p = node.pods.find((x) => x.id === req.podSandboxId);
        if (!p) throw notFound(`sandbox ${req.podSandboxId}`);
        return {
          status: { ...podWire(p), network: { ip: '10.244.0.7', additionalIps: [] }, linux: { namespaces: { options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } } },
          info: {},
        };
      },
      ListContainers: (req) => ({
        containers: node.containers
          .filter((c) => !req.filter?.id || c.id === req.filter.id)
          .filter((c) => !req.filter?.podSandboxId || c.podSandboxId === req.filter.podSandboxId)
          .filter((c) => !req.filter?.state || c.state === req.filter.state.state)
          .map((c) => ({
            id: c.id,
            podSandboxId: c.podSandboxId,
            metadata: { name: c.name, attempt: c.attempt },
            image: { image: c.image },
            imageRef: `sha256:${'ab'.repeat(32)}`,
            state: c.state,
            createdAt: c.createdAt.toString(),
            labels: c.labels ?? {},
            annotations: c.annotations ?? {},
          })),
      }),
      ContainerStatus: (req) => {
        if (this.failStatus.has(req.containerId)) {
          throw Object.assign(new Error('status failed'), { code: grpc.status.INTERNAL, details: `failed to get status of ${req.containerId}: shim: ttrpc: closed` });
        }
        const c = node.containers.find((x) => x.id === req.containerId);
        if (!c) throw notFound(`container "${req.containerId}"`);
        return { status: containerStatusWire(c), info: req.verbose ? { info: JSON.stringify(verboseInfo(c)) } : {} };
      },
    };
  }

  private imageHandlers(): Record<string, (req: any) => unknown> {
    return {
      ListImages: () => ({ images: this.node.images.map((i) => ({ id: i.id, repoTags: i.repoTags, repoDigests: [], size: String(i.size) })) }),
      ImageFsInfo: () => ({
        imageFilesystems: [{ timestamp: '1', fsId: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' }, usedBytes: { value: '1000' }, inodesUsed: { value: '10' } }],
        containerFilesystems: [],
      }),
    };
  }
}

function podWire(p: FakePod) {
  return {
    id: p.id,
    metadata: { name: p.name, uid: p.uid, namespace: p.namespace, attempt: p.attempt },
    state: p.state,
    createdAt: p.createdAt.toString(),
    labels: { 'io.kubernetes.pod.name': p.name, 'io.kubernetes.pod.namespace': p.namespace, 'io.kubernetes.pod.uid': p.uid, ...p.labels },
    annotations: p.annotations ?? {},
    runtimeHandler: '',
  };
}

function containerStatusWire(c: FakeContainer) {
  return {
    id: c.id,
    metadata: { name: c.name, attempt: c.attempt },
    state: c.state,
    createdAt: c.createdAt.toString(),
    startedAt: (c.startedAt ?? 0n).toString(),
    finishedAt: (c.finishedAt ?? 0n).toString(),
    exitCode: c.exitCode ?? 0,
    image: { image: c.image },
    imageRef: c.image,
    reason: c.reason ?? '',
    message: '',
    labels: c.labels ?? {},
    annotations: c.annotations ?? {},
    mounts: [],
    logPath: c.logPath ?? '',
  };
}

/** The shape of containerd 1.6's verbose ContainerStatus info (CRI config + OCI runtime spec). */
function verboseInfo(c: FakeContainer) {
  const env = Object.entries(c.env ?? {});
  return {
    sandboxID: c.podSandboxId,
    pid: c.pid ?? 0,
    removing: false,
    snapshotKey: c.id,
    snapshotter: 'overlayfs',
    runtimeType: 'io.containerd.runc.v2',
    config: {
      metadata: { name: c.name, attempt: c.attempt },
      image: { image: c.image },
      args: c.args ?? [],
      envs: env.map(([key, value]) => ({ key, value })),
      labels: c.labels ?? {},
      annotations: c.annotations ?? {},
      log_path: c.logPath ?? '',
    },
    runtimeSpec: {
      ociVersion: '1.0.2-dev',
      process: { user: { uid: 0, gid: 0 }, args: c.args ?? [], env: env.map(([k, v]) => `${k}=${v}`), cwd: '/' },
      annotations: c.annotations ?? {},
      linux: { cgroupsPath: c.cgroupsPath ?? '' },
    },
  };
}

const NS = 1_000_000_000n;

/**
 * A generated node: `pods` pods with `perPod` containers each, some exited
 * with rising attempts. Deterministic, so two runs compare.
 */
export function generateFakeNode(pods: number, perPod: number, now = BigInt(Date.now()) * 1_000_000n): FakeNode {
  const hex = (n: number, salt: string) => (salt + n.toString(16).padStart(8, '0')).padEnd(64, '0');
  const node: FakeNode = { pods: [], containers: [], images: [{ id: `sha256:${'c'.repeat(64)}`, repoTags: ['registry.k8s.io/pause:3.9'], size: 321_000 }] };
  for (let p = 0; p < pods; p++) {
    const uid = `${p.toString(16).padStart(8, '0')}-1111-4222-8333-944455556666`;
    const podId = hex(p, 'a');
    node.pods.push({ id: podId, name: `app-${p}`, namespace: `ns-${p % 10}`, uid, attempt: 0, state: 'SANDBOX_READY', createdAt: now - 3600n * NS });
    for (let c = 0; c < perPod; c++) {
      const exited = c === perPod - 1 && p % 5 === 0;
      node.containers.push({
        id: hex(p * perPod + c, 'b'),
        podSandboxId: podId,
        name: `c${c}`,
        attempt: exited ? 3 : 0,
        image: 'docker.io/library/busybox:1.36',
        state: exited ? 'CONTAINER_EXITED' : 'CONTAINER_RUNNING',
        createdAt: now - BigInt(60 + c) * NS,
        startedAt: now - BigInt(59 + c) * NS,
        ...(exited ? { finishedAt: now - 10n * NS, exitCode: 1, reason: 'Error' } : {}),
        labels: { 'io.kubernetes.container.name': `c${c}`, 'io.kubernetes.pod.name': `app-${p}`, 'io.kubernetes.pod.namespace': `ns-${p % 10}`, 'io.kubernetes.pod.uid': uid },
      });
    }
  }
  return node;
}
