/**
 * Pure mapping of CRI wire messages (as proto-loader decodes them: camelCase,
 * int64 as decimal strings, enums as names) to nodetruth's runtime records.
 */
import type {
  ContainerState,
  ContainerStatus,
  FilesystemUsage,
  Image,
  ImageFsInfo,
  PodSandbox,
  PodSandboxDetail,
  RuntimeFeatures,
  RuntimeHandler,
  RuntimeStatus,
  SandboxState,
} from '../../model/runtime.js';
import { redactDeep, redactMap } from '../../redact.js';
import { mapSliced } from '../../lib/turns.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- wire messages are untyped JSON */
type Wire = any;

/** A positive int64 as proto-loader gives it (longs: String), 10-19 digits: seconds since 2001-09-09, fits a Date. */
const PLAIN_NANOS = /^[1-9]\d{9,18}$/;

/** CRI timestamps are int64 nanoseconds since the epoch; 0 means unset. */
export function nanosToRfc3339(nanos: string | number | null | undefined): string | null {
  if (nanos === null || nanos === undefined) return null;
  // the common shape without BigInt: 3 per container, 3,000 containers a list
  if (typeof nanos === 'string' && PLAIN_NANOS.test(nanos)) {
    const cut = nanos.length - 9;
    return `${new Date(Number(nanos.slice(0, cut)) * 1000).toISOString().slice(0, 19)}.${nanos.slice(cut)}Z`;
  }
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

/**
 * A list decoded by decode.ts, its labels and annotations redacted in place, in slices
 * (lib/turns): at 3,000 containers the redaction costs ~10-40 ms on the 2-core machine, in one
 * stretch with the list's own decode and the other work resumed in that tick.
 */
export function redactListed<T extends { labels: Record<string, string>; annotations: Record<string, string> }>(items: T[], pause?: () => Promise<unknown>): Promise<T[]> {
  return mapSliced(items, redactOwn, { maxItems: LIST_SLICE, ...(pause ? { pause } : {}) });
}

function redactOwn<T extends { labels: Record<string, string>; annotations: Record<string, string> }>(item: T): T {
  item.labels = redactMap(item.labels);
  item.annotations = redactMap(item.annotations);
  return item;
}

/** Items of a list normalized between two yields at most (fewer when they take longer than SLICE_MS). */
export const LIST_SLICE = 500;

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

/**
 * Handlers kept from one StatusResponse. containerd lists one per configured runtime plus
 * the default again as ""; a node has a handful. The gRPC size limit would let a runtime
 * send millions, and each becomes table rows, so the rest are counted in a warning.
 */
const MAX_RUNTIME_HANDLERS = 256;

/**
 * A features message as proto-loader decodes it: an unset message field is null (the
 * runtime reported nothing: containerd 1.6), a set one has every flag (false when the
 * runtime left it out: not supported). The two must stay apart, so no default here.
 */
const isMessage = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function toRuntimeFeatures(f: unknown): RuntimeFeatures | null {
  if (!isMessage(f)) return null;
  return {
    supplementalGroupsPolicy: f.supplementalGroupsPolicy === true,
    userNamespacesHostNetwork: f.userNamespacesHostNetwork === true,
    mountOptions: f.mountOptions === true,
  };
}

function toRuntimeHandler(h: Wire): RuntimeHandler {
  const f = h?.features;
  return {
    name: typeof h?.name === 'string' ? h.name : '',
    features: isMessage(f) ? { recursiveReadOnlyMounts: f.recursiveReadOnlyMounts === true, userNamespaces: f.userNamespaces === true } : null,
  };
}

export function toRuntimeStatus(res: Wire): RuntimeStatus {
  const handlers: Wire[] = Array.isArray(res.runtimeHandlers) ? res.runtimeHandlers : [];
  const warnings =
    handlers.length > MAX_RUNTIME_HANDLERS ? [`runtime handlers: ${handlers.length - MAX_RUNTIME_HANDLERS} of ${handlers.length} not shown (over ${MAX_RUNTIME_HANDLERS})`] : [];
  return {
    conditions: (res.status?.conditions ?? []).map((c: Wire) => ({
      type: c.type,
      status: Boolean(c.status),
      reason: c.reason ?? '',
      message: c.message ?? '',
    })),
    info: redactDeep(parseInfo(res.info)) as Record<string, unknown>,
    runtimeHandlers: handlers.slice(0, MAX_RUNTIME_HANDLERS).map(toRuntimeHandler),
    features: toRuntimeFeatures(res.features),
    warnings,
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

/** Runtime types whose options are runc's (runcoptions.Options, with SystemdCgroup), in 1.6 and 2.x alike. */
const RUNC_TYPES = new Set(['io.containerd.runc.v2', 'io.containerd.runc.v1']);
/** containerd 1.6's legacy runtime: the driver is the CRI config's own top-level systemdCgroup. */
const LEGACY_LINUX_RUNTIME = 'io.containerd.runtime.v1.linux';
/** Handlers looked at: a config lists a handful; the walk stops here on a hostile one. */
const MAX_DRIVER_HANDLERS = 1024;

/**
 * runc's SystemdCgroup option. containerd hands the options table to go-toml, which
 * matches a struct field's name exactly first, then case-insensitively; so do we.
 * undefined when absent (runc's default: cgroupfs).
 */
function systemdCgroupOption(options: Record<string, unknown>): unknown {
  if ('SystemdCgroup' in options) return options.SystemdCgroup;
  let n = 0;
  for (const k in options) {
    if (++n > MAX_DRIVER_HANDLERS) break;
    if (k.length === 13 && k.toLowerCase() === 'systemdcgroup') return options[k];
  }
  return undefined;
}

/**
 * The cgroup driver of containerd's runc, from the verbose Status `config`, decided as
 * containerd 2.x decides it for kubelet's RuntimeConfig call (internal/cri/server/
 * runtime_config_linux.go): the default handler first, then the others by name; the
 * first runc handler whose options parse decides by its SystemdCgroup option.
 *
 * Both shapes keep `containerd.runtimes.<name>.{runtimeType, options}`: 1.6 serializes
 * the CRI plugin's PluginConfig (`options` runc's whole options struct; a top-level
 * `systemdCgroup` for the legacy runtime); 2.x serializes the runtime plugin's Config
 * (RuntimeConfig embedded, so `containerd` stays at the top; `options` is the TOML
 * table as written; no top-level `systemdCgroup`). null when the config does not say:
 * no verbose config, or no runc handler (2.x then guesses from whether systemd runs).
 */
export function cgroupDriverOf(info: Record<string, unknown>): 'systemd' | 'cgroupfs' | null {
  const config = info.config;
  if (!isMessage(config) || !isMessage(config.containerd) || !isMessage(config.containerd.runtimes)) return null;
  const runtimes = config.containerd.runtimes;
  const def = typeof config.containerd.defaultRuntimeName === 'string' ? config.containerd.defaultRuntimeName : '';
  const names = Object.keys(runtimes)
    .slice(0, MAX_DRIVER_HANDLERS)
    .sort((a, b) => (a === def ? -1 : b === def ? 1 : a < b ? -1 : a > b ? 1 : 0));
  for (const name of names) {
    const r = runtimes[name];
    if (!isMessage(r)) continue;
    if (r.runtimeType === LEGACY_LINUX_RUNTIME) {
      const v = isMessage(r.options) ? systemdCgroupOption(r.options) : undefined;
      return config.systemdCgroup === true || v === true ? 'systemd' : 'cgroupfs';
    }
    if (typeof r.runtimeType !== 'string' || !RUNC_TYPES.has(r.runtimeType)) continue;
    // no options table: containerd generates no runc options and asks the next handler
    if (!isMessage(r.options)) continue;
    const v = systemdCgroupOption(r.options);
    if (v === undefined) return 'cgroupfs';
    // a non-boolean does not decode into runc's options: containerd skips the handler
    if (typeof v !== 'boolean') continue;
    return v ? 'systemd' : 'cgroupfs';
  }
  return null;
}
