/** Runtime records, normalized from CRI messages. Times are RFC 3339 with nanoseconds, or null when unset. */

export type SandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type ContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

export interface RuntimeVersion {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

/**
 * CRI RuntimeFeatures (StatusResponse field 4). containerd >= 2.0 sends it; 1.6 does not.
 * Within a reported message a false flag means "not supported" (proto3 cannot tell an
 * unset bool from false); the whole message is null when the runtime reported none.
 */
export interface RuntimeFeatures {
  supplementalGroupsPolicy: boolean;
  userNamespacesHostNetwork: boolean;
  mountOptions: boolean;
}

/** CRI RuntimeHandlerFeatures: what one handler (runc, crun, kata ...) can do. */
interface RuntimeHandlerFeatures {
  recursiveReadOnlyMounts: boolean;
  userNamespaces: boolean;
}

export interface RuntimeHandler {
  /** "" is the default handler (containerd 2.x lists it once as "" and once by its own name). */
  name: string;
  /** null: not reported (containerd 1.6, or 2.x when it could not introspect the handler's OCI runtime). */
  features: RuntimeHandlerFeatures | null;
}

export interface RuntimeStatus {
  conditions: RuntimeCondition[];
  /** Verbose info, each value parsed from its JSON string (config, cniconfig, golang ...). */
  info: Record<string, unknown>;
  runtimeHandlers: RuntimeHandler[];
  /**
   * Runtime-wide features; null when the runtime reported none. toRuntimeStatus always
   * sets it; it is optional only so that records built by hand (snapshots, fixtures) need not.
   */
  features?: RuntimeFeatures | null;
  /** What was cut from the answer (handlers past MAX_RUNTIME_HANDLERS). */
  warnings?: string[];
}

export interface PodSandbox {
  id: string;
  name: string;
  namespace: string;
  uid: string;
  attempt: number;
  state: SandboxState;
  createdAt: string | null;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  runtimeHandler: string;
}

export interface PodSandboxDetail extends PodSandbox {
  network: { ip: string; additionalIps: string[] } | null;
  namespaceOptions: { network: string; pid: string; ipc: string; targetId: string } | null;
  info: Record<string, unknown>;
}

export interface Container {
  id: string;
  name: string;
  attempt: number;
  podId: string;
  image: string;
  imageRef: string;
  state: ContainerState;
  createdAt: string | null;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** What a list row takes from ContainerStatus: how the container ran and ended. */
export type ContainerEnd = Pick<ContainerStatus, 'id' | 'state' | 'startedAt' | 'finishedAt' | 'exitCode' | 'reason'>;

export interface ContainerStatus {
  id: string;
  name: string;
  attempt: number;
  state: ContainerState;
  createdAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  exitCode: number;
  reason: string;
  message: string;
  image: string;
  imageRef: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: { containerPath: string; hostPath: string; readonly: boolean }[];
  logPath: string;
  resources: {
    cpuPeriod: number;
    cpuQuota: number;
    cpuShares: number;
    memoryLimitInBytes: number;
    oomScoreAdj: number;
    cpusetCpus: string;
  } | null;
  /** Verbose info (pid, sandboxID, runtimeSpec ...), already redacted. */
  info: Record<string, unknown>;
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  pinned: boolean;
  username: string;
  uid: number | null;
}

export interface FilesystemUsage {
  timestamp: string | null;
  mountpoint: string;
  usedBytes: number | null;
  inodesUsed: number | null;
}

export interface ImageFsInfo {
  imageFilesystems: FilesystemUsage[];
  containerFilesystems: FilesystemUsage[];
}
