/**
 * One snapshot of the node for the triage rules: every source read once, in
 * parallel, each with its own deadline. A source that fails or is late is
 * recorded as such (the rules turn that into a finding); nothing here throws.
 * What a source skipped while it read (an unreadable cgroup, a node file that is
 * a directory) is collected in `warnings`, each prefixed with the source's key.
 */
import type { CgroupRecord } from '../model/cgroup.js';
import type { NodeFacts, NodeHealth } from '../model/node.js';
import type { PodSandbox, RuntimeStatus, RuntimeVersion } from '../model/runtime.js';
import type { ThrottlingReport } from '../sources/cgroup/throttling.js';
import type { CniState } from '../sources/cni/cni.js';
import type { ContainerRow } from '../sources/cri/runtime-view.js';
import type { JournalRecord } from '../sources/journal/record.js';
import type { AttributedOomKill } from '../sources/oom/oom.js';
import type { KernelProblems } from '../sources/kmsg/kernel-problems.js';
import { isSourceError, SourceError, type SourceErrorCode } from '../sources/errors.js';
import { THRESHOLDS } from './thresholds.js';

/** A source's answer, or why there is none: the SourceError's code (null for an error without one), so rules match codes, never HTTP statuses. */
export type Got<T> = { ok: true; value: T; durationMs: number } | { ok: false; error: string; code: SourceErrorCode | null; durationMs: number };

export interface RuntimeInfo {
  version: RuntimeVersion;
  status: RuntimeStatus;
}

export interface TriageSnapshot {
  nodeName: string;
  takenAt: string;
  /** the clock the rules measure ages and windows against (ms since the epoch) */
  nowMs: number;
  windowMs: number;
  criEndpoint: string | null;
  runtime: Got<RuntimeInfo>;
  pods: Got<PodSandbox[]>;
  containers: Got<ContainerRow[]>;
  cgroups: Got<CgroupRecord[]>;
  throttling: Got<ThrottlingReport>;
  host: Got<NodeHealth>;
  cni: Got<CniState>;
  oom: Got<{ kills: AttributedOomKill[]; warnings: string[] }>;
  kubeletJournal: Got<{ records: JournalRecord[]; truncated: string | null; warnings: string[] }>;
  /** kernel log problems (sources/kmsg/problems.ts's table), attributed; absent where the sources do not read them */
  kernel?: Got<KernelProblems>;
  /** conntrack, taint, D/Z processes, kubelet certificates and eviction thresholds, mounts, CRI latency (issue 15); absent where the sources do not read them */
  facts?: Got<NodeFacts>;
  /** items the sources skipped ("cgroups: cgroup /kubepods.slice/...: unreadable (EISDIR), skipped") */
  warnings?: string[];
}

/** The reads behind a snapshot; tests replace any of them. Each may throw (a Problem or any error). */
export interface TriageSources {
  nodeName: string;
  criEndpoint: string | null;
  runtime(): Promise<RuntimeInfo>;
  pods(): Promise<PodSandbox[]>;
  containers(): Promise<ContainerRow[]>;
  /** `warnings`: where a source names what it skipped; the answer stands without it */
  cgroups(warnings: string[]): Promise<CgroupRecord[]>;
  throttling(windowMs: number, signal: AbortSignal, warnings: string[]): Promise<ThrottlingReport>;
  host(warnings: string[]): Promise<NodeHealth>;
  /** runtime info (may hold the CNI dirs) or null when the runtime did not answer */
  cni(runtimeInfo: Record<string, unknown> | null): Promise<CniState>;
  oom(signal: AbortSignal): Promise<{ kills: AttributedOomKill[]; warnings: string[] }>;
  kubeletJournal(sinceUs: number, signal: AbortSignal): Promise<{ records: JournalRecord[]; truncated: string | null; warnings: string[] }>;
  /** kernel log problems; optional: a snapshot without it has no kernel findings */
  kernel?(signal: AbortSignal): Promise<KernelProblems>;
  /** node facts (sources/node/facts.ts); optional: a snapshot without them has no node-facts findings */
  facts?(signal: AbortSignal, warnings: string[]): Promise<NodeFacts>;
}

/** Per-source deadlines (ms); throttling gets its window on top. */
export const SOURCE_DEADLINES = {
  runtime: 5000,
  pods: 5000,
  containers: 8000,
  cgroups: 5000,
  throttling: 5000,
  host: 3000,
  cni: 2000,
  oom: 8000,
  kubeletJournal: 10_000,
  kernel: 8000,
  /** the /proc walk's budget is 1.5 s, attribution as much again */
  facts: 5000,
} as const;

async function got<T>(fn: (signal: AbortSignal) => Promise<T>, deadlineMs: number, what: string): Promise<Got<T>> {
  const t0 = performance.now();
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      ac.abort();
      reject(new SourceError('source_timeout', `${what}: no answer within ${deadlineMs} ms`));
    }, deadlineMs);
  });
  const ms = () => Math.round(performance.now() - t0);
  try {
    const p = fn(ac.signal);
    p.catch(() => {});
    const value = await Promise.race([p, late]);
    return { ok: true, value, durationMs: ms() };
  } catch (err) {
    // anything may be thrown (null, a string, an object without message): describing it must not throw
    return { ok: false, error: describe(err), code: isSourceError(err) ? err.code : null, durationMs: ms() };
  } finally {
    clearTimeout(timer);
  }
}

const ERROR_MAX = 2000;

function describe(err: unknown): string {
  let text: string;
  try {
    const m = (err as { message?: unknown } | null)?.message;
    text = typeof m === 'string' && m !== '' ? m : String(err);
  } catch {
    text = 'an error that cannot be described';
  }
  return text.length > ERROR_MAX ? `${text.slice(0, ERROR_MAX)}…` : text;
}

/** At most this many warnings per source in a report: a node with 10,000 bad cgroups says so, briefly. */
export const MAX_SOURCE_WARNINGS = 50;

function prefixed(key: string, list: readonly string[]): string[] {
  const unique = [...new Set(list)];
  const out = unique.slice(0, MAX_SOURCE_WARNINGS).map((w) => `${key}: ${w}`);
  if (unique.length > MAX_SOURCE_WARNINGS) out.push(`${key}: ${unique.length - MAX_SOURCE_WARNINGS} more warnings`);
  return out;
}

export interface GatherOptions {
  windowMs: number;
  now?: number;
  deadlines?: Partial<Record<keyof typeof SOURCE_DEADLINES, number>>;
}

export async function gatherSnapshot(src: TriageSources, opts: GatherOptions): Promise<TriageSnapshot> {
  const nowMs = opts.now ?? Date.now();
  const d = { ...SOURCE_DEADLINES, ...opts.deadlines };
  const sinceUs = (nowMs - THRESHOLDS.journalWindowMinutes * 60_000) * 1000;
  const runtimeP = got(() => src.runtime(), d.runtime, 'runtime');
  const w = { cgroups: [] as string[], throttling: [] as string[], host: [] as string[], facts: [] as string[] };
  // started with the others, awaited after them (an optional source kept out of the tuple below)
  const kernelP = src.kernel ? got((signal) => src.kernel!(signal), d.kernel, 'kernel log problems') : null;
  const factsP = src.facts ? got((signal) => src.facts!(signal, w.facts), d.facts, 'node facts') : null;
  const [runtime, pods, containers, cgroups, throttling, host, cni, oom, kubeletJournal] = await Promise.all([
    runtimeP,
    got(() => src.pods(), d.pods, 'pod sandboxes'),
    got(() => src.containers(), d.containers, 'containers'),
    got(() => src.cgroups(w.cgroups), d.cgroups, 'cgroups'),
    got((signal) => src.throttling(opts.windowMs, signal, w.throttling), d.throttling + opts.windowMs, 'throttling'),
    got(() => src.host(w.host), d.host, 'node health'),
    runtimeP.then((r) => got(() => src.cni(r.ok ? r.value.status.info : null), d.cni, 'CNI state')),
    got((signal) => src.oom(signal), d.oom, 'kernel OOM kills'),
    got((signal) => src.kubeletJournal(sinceUs, signal), d.kubeletJournal, 'kubelet journal'),
  ]);
  const kernel = kernelP ? await kernelP : undefined;
  const facts = factsP ? await factsP : undefined;
  return {
    nodeName: src.nodeName,
    takenAt: new Date(nowMs).toISOString(),
    nowMs,
    windowMs: opts.windowMs,
    criEndpoint: src.criEndpoint,
    runtime,
    pods,
    containers,
    cgroups,
    throttling,
    host,
    cni,
    oom,
    kubeletJournal,
    ...(kernel ? { kernel } : {}),
    ...(facts ? { facts } : {}),
    warnings: [
      ...prefixed('cgroups', w.cgroups),
      ...prefixed('throttling', w.throttling),
      ...prefixed('host', w.host),
      ...prefixed('facts', w.facts),
      ...prefixed('oom', oom.ok && Array.isArray(oom.value.warnings) ? oom.value.warnings : []),
      ...prefixed('kubeletJournal', kubeletJournal.ok && Array.isArray(kubeletJournal.value.warnings) ? kubeletJournal.value.warnings : []),
      ...prefixed('kernel', kernel?.ok && Array.isArray(kernel.value.warnings) ? kernel.value.warnings : []),
    ],
  };
}
