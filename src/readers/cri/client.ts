import * as grpc from '@grpc/grpc-js';
import type {
  Container,
  ContainerEnd,
  ContainerStatus,
  Image,
  ImageFsInfo,
  PodSandbox,
  PodSandboxDetail,
  RuntimeStatus,
  RuntimeVersion,
} from '../../model/runtime.js';
import { mapCriError } from './errors.js';
import {
  toContainerStatus,
  toImage,
  toImageFsInfo,
  toPodSandboxDetail,
  redactListed,
  toRuntimeStatus,
} from './normalize.js';
import { criServices, type UnaryCoder } from './proto.js';

/** Called once per CRI call, for metrics (method, gRPC code name, seconds). */
type CallObserver = (method: string, code: string, seconds: number) => void;

interface ContainerFilter {
  id?: string;
  podSandboxId?: string;
  state?: Container['state'];
  labelSelector?: Record<string, string>;
}

interface PodSandboxFilter {
  id?: string;
  state?: PodSandbox['state'];
  labelSelector?: Record<string, string>;
}

/**
 * The runtime layer: one gRPC channel per CRI socket, a deadline on every call,
 * gRPC failures turned into SourceErrors (runtime_unreachable, runtime_timeout, not_found, ...).
 * Read-only by construction: the proto it loads has no mutating methods.
 */
export class CriClient {
  readonly endpoint: string;
  readonly socketPath: string;
  readonly timeoutMs: number;
  private readonly runtime: grpc.Client;
  private readonly images: grpc.Client;
  private readonly observers: CallObserver[] = [];

  constructor(endpoint: string, timeoutMs: number) {
    this.endpoint = endpoint;
    this.socketPath = endpoint.replace(/^unix:\/\//, '');
    this.timeoutMs = timeoutMs;
    const { RuntimeService, ImageService } = criServices();
    const target = `unix:${this.socketPath}`;
    const options: grpc.ChannelOptions = {
      // kubelet and crictl allow 16 MiB messages; a node with many containers needs it.
      'grpc.max_receive_message_length': 16 * 1024 * 1024,
      // Reconnect quickly after containerd restarts instead of backing off for minutes.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
    };
    this.runtime = new RuntimeService(target, grpc.credentials.createInsecure(), options);
    // Both services share the one channel to the socket.
    this.images = new ImageService(target, grpc.credentials.createInsecure(), {
      ...options,
      channelOverride: this.runtime.getChannel(),
    });
  }

  onCall(observer: CallObserver): void {
    this.observers.push(observer);
  }

  close(): void {
    this.images.close();
    this.runtime.close();
  }

  async version(): Promise<RuntimeVersion> {
    const r = await this.call<RuntimeVersion>(this.runtime, 'Version', { version: 'v1' });
    return { version: r.version, runtimeName: r.runtimeName, runtimeVersion: r.runtimeVersion, runtimeApiVersion: r.runtimeApiVersion };
  }

  async status(verbose = true): Promise<RuntimeStatus> {
    return toRuntimeStatus(await this.call(this.runtime, 'Status', { verbose }));
  }

  /** Decoded straight into records (decode.ts), then redacted in slices. */
  async listPodSandboxes(filter: PodSandboxFilter = {}): Promise<PodSandbox[]> {
    const res = await this.call<{ items: PodSandbox[] }>(this.runtime, 'ListPodSandbox', { filter: wireFilter(filter) }, unary(criServices().sandboxList));
    return redactListed(res.items);
  }

  async podSandboxStatus(id: string, verbose = true): Promise<PodSandboxDetail> {
    return toPodSandboxDetail(await this.call(this.runtime, 'PodSandboxStatus', { podSandboxId: id, verbose }));
  }

  /** Decoded straight into records (decode.ts), then redacted in slices. */
  async listContainers(filter: ContainerFilter = {}): Promise<Container[]> {
    const res = await this.call<{ containers: Container[] }>(this.runtime, 'ListContainers', { filter: wireFilter(filter) }, unary(criServices().containerList));
    return redactListed(res.containers);
  }

  async containerStatus(id: string, verbose = false): Promise<ContainerStatus> {
    return toContainerStatus(await this.call(this.runtime, 'ContainerStatus', { containerId: id, verbose }));
  }

  /**
   * ContainerStatus (not verbose) read for a list row: only the fields of ContainerEnd are
   * decoded, the rest of the message (labels, annotations, mounts) is skipped on the wire.
   */
  async containerEnd(id: string): Promise<ContainerEnd> {
    return this.call<ContainerEnd>(this.runtime, 'ContainerStatus', { containerId: id, verbose: false }, unary(criServices().containerEnd));
  }

  async listImages(): Promise<Image[]> {
    const res = await this.call<{ images: unknown[] }>(this.images, 'ListImages', {});
    return res.images.map(toImage);
  }

  async imageFsInfo(): Promise<ImageFsInfo> {
    return toImageFsInfo(await this.call(this.images, 'ImageFsInfo', {}));
  }

  /** `invoke`: how the call is made, when not by the service's own method (a reduced decoder) */
  private call<T>(client: grpc.Client, method: string, request: object, invoke?: Invoke): Promise<T> {
    const started = process.hrtime.bigint();
    const fn: Invoke = invoke ?? ((c, req, options, done) => (c as unknown as Record<string, Function>)[method]!.call(c, req, options, done));
    return new Promise<T>((resolve, reject) => {
      fn(client, request, { deadline: Date.now() + this.timeoutMs }, (err: grpc.ServiceError | null, res?: unknown) => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        const code = err ? (grpc.status[err.code] ?? String(err.code)) : 'OK';
        for (const observe of this.observers) observe(method, code, seconds);
        if (err) reject(mapCriError(err, method, this.socketPath, this.timeoutMs));
        else resolve(res as T);
      });
    });
  }
}

type Invoke = (client: grpc.Client, request: object, options: grpc.CallOptions, done: (err: grpc.ServiceError | null, res?: unknown) => void) => unknown;

/** A call made with coders of our own (proto.ts) instead of the service's method. */
const unary =
  ({ path, serialize, deserialize }: UnaryCoder): Invoke =>
  (client, request, options, done) =>
    client.makeUnaryRequest(path, serialize, deserialize, request, options, done);

function wireFilter(f: ContainerFilter | PodSandboxFilter): object | undefined {
  const out: Record<string, unknown> = {};
  if (f.id) out.id = f.id;
  if ('podSandboxId' in f && f.podSandboxId) out.podSandboxId = f.podSandboxId;
  if (f.state) out.state = { state: f.state };
  if (f.labelSelector && Object.keys(f.labelSelector).length > 0) out.labelSelector = f.labelSelector;
  return Object.keys(out).length > 0 ? out : undefined;
}
