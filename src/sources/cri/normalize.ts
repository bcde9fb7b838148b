/**
 * Pure mapping of CRI wire messages (as proto-loader decodes them: camelCase,
 * int64 as decimal strings, enums as names) to nodetruth's runtime records.
 */
import type {
  Container,
  ContainerState,
  ContainerStatus,
  FilesystemUsage,
  Image,
  ImageFsInfo,
  PodSandbox,
  PodSandboxDetail,
  RuntimeStatus,
  SandboxState,
} from '../../model/runtime.js';
import { redactDeep, redactMap } from '../../redact.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- wire messages are untyped JSON */
type Wire = any;

/** CRI timestamps are int64 nanoseconds since the epoch; 0 means unset. */
export function nanosToRfc3339(nanos: string | number | null | undefined): string | null {
  if (nanos === null || nanos === undefined) return null;
  const n = BigInt(nanos);
  if (n <= 0n) return null;
  const seconds = n / 1_000_000_000n;
  const frac = (n % 1_000_000_000n).toString().padStart(9, '0');
  const base = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  return `${base}.${frac}Z`;
}

const num = (v: unknown): number => (v === null || v === undefined || v === '' ? 0 : Number(v));

/**
 * The largest verbose-info value parsed as JSON. A real container's info (CRI config +
 * OCI spec) is 10–600 KiB; the gRPC limit lets a runtime send 16 MiB, and JSON.parse
 * holds the event loop ~25 ms per MiB, so a bigger value is reported, not parsed.
 */
export const MAX_INFO_JSON = 2 * 1024 * 1024;

/** `info` values are JSON documents in a string map; parse each, keep the text when it is not JSON. */
export function parseInfo(info: Record<string, string> | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(info ?? {})) {
    if (v.length > MAX_INFO_JSON) {
      out[k] = `<not parsed: ${v.length} characters, over the ${MAX_INFO_JSON}-character bound>`;
      continue;
    }
    try {
      out[k] = JSON.parse(v);
    } catch {
      out[k] = v;
    }
  }
  return out;
}

export function toPodSandbox(p: Wire): PodSandbox {
  return {
    id: p.id,
    name: p.metadata?.name ?? '',
    namespace: p.metadata?.namespace ?? '',
    uid: p.metadata?.uid ?? '',
    attempt: num(p.metadata?.attempt),
    state: p.state as SandboxState,
    createdAt: nanosToRfc3339(p.createdAt),
    labels: redactMap(p.labels ?? {}),
    annotations: redactMap(p.annotations ?? {}),
    runtimeHandler: p.runtimeHandler ?? '',
  };
}

export function toPodSandboxDetail(res: Wire): PodSandboxDetail {
  const s = res.status ?? {};
  const ns = s.linux?.namespaces?.options;
  return {
    ...toPodSandbox(s),
    network: s.network ? { ip: s.network.ip, additionalIps: (s.network.additionalIps ?? []).map((i: Wire) => i.ip) } : null,
    namespaceOptions: ns ? { network: ns.network, pid: ns.pid, ipc: ns.ipc, targetId: ns.targetId } : null,
    info: redactDeep(parseInfo(res.info)) as Record<string, unknown>,
  };
}

export function toContainer(c: Wire): Container {
  return {
    id: c.id,
    name: c.metadata?.name ?? '',
    attempt: num(c.metadata?.attempt),
    podId: c.podSandboxId,
    image: c.image?.userSpecifiedImage || c.image?.image || '',
    imageRef: c.imageRef ?? '',
    state: c.state as ContainerState,
    createdAt: nanosToRfc3339(c.createdAt),
    labels: redactMap(c.labels ?? {}),
    annotations: redactMap(c.annotations ?? {}),
  };
}

export function toContainerStatus(res: Wire): ContainerStatus {
  const s = res.status ?? {};
  const r = s.resources?.linux;
  return {
    id: s.id,
    name: s.metadata?.name ?? '',
    attempt: num(s.metadata?.attempt),
    state: s.state as ContainerState,
    createdAt: nanosToRfc3339(s.createdAt),
    startedAt: nanosToRfc3339(s.startedAt),
    finishedAt: nanosToRfc3339(s.finishedAt),
    exitCode: num(s.exitCode),
    reason: s.reason ?? '',
    message: s.message ?? '',
    image: s.image?.userSpecifiedImage || s.image?.image || '',
    imageRef: s.imageRef ?? '',
    labels: redactMap(s.labels ?? {}),
    annotations: redactMap(s.annotations ?? {}),
    mounts: (s.mounts ?? []).map((m: Wire) => ({ containerPath: m.containerPath, hostPath: m.hostPath, readonly: Boolean(m.readonly) })),
    logPath: s.logPath ?? '',
    resources: r
      ? {
          cpuPeriod: num(r.cpuPeriod),
          cpuQuota: num(r.cpuQuota),
          cpuShares: num(r.cpuShares),
          memoryLimitInBytes: num(r.memoryLimitInBytes),
          oomScoreAdj: num(r.oomScoreAdj),
          cpusetCpus: r.cpusetCpus ?? '',
        }
      : null,
    info: redactDeep(parseInfo(res.info)) as Record<string, unknown>,
  };
}

export function toRuntimeStatus(res: Wire): RuntimeStatus {
  return {
    conditions: (res.status?.conditions ?? []).map((c: Wire) => ({
      type: c.type,
      status: Boolean(c.status),
      reason: c.reason ?? '',
      message: c.message ?? '',
    })),
    info: redactDeep(parseInfo(res.info)) as Record<string, unknown>,
    runtimeHandlers: (res.runtimeHandlers ?? []).map((h: Wire) => h.name),
  };
}

export function toImage(i: Wire): Image {
  return {
    id: i.id,
    repoTags: i.repoTags ?? [],
    repoDigests: i.repoDigests ?? [],
    size: num(i.size),
    pinned: Boolean(i.pinned),
    username: i.username ?? '',
    uid: i.uid ? num(i.uid.value) : null,
  };
}

function toFsUsage(f: Wire): FilesystemUsage {
  return {
    timestamp: nanosToRfc3339(f.timestamp),
    mountpoint: f.fsId?.mountpoint ?? '',
    usedBytes: f.usedBytes ? num(f.usedBytes.value) : null,
    inodesUsed: f.inodesUsed ? num(f.inodesUsed.value) : null,
  };
}

export function toImageFsInfo(res: Wire): ImageFsInfo {
  return {
    imageFilesystems: (res.imageFilesystems ?? []).map(toFsUsage),
    containerFilesystems: (res.containerFilesystems ?? []).map(toFsUsage),
  };
}
