/**
 * One snapshot of the node for the triage rules: every source read once, in
 * parallel, each within its part's deadline (deadlines.ts), the kernel ring once
 * for both of its readers. A source that fails or is late is recorded as such
 * (the rules turn that into a finding); nothing here throws.
 * What a source skipped while it read (an unreadable cgroup, a node file that is
 * a directory) is collected in `warnings`, each prefixed with the source's key.
 */
import type { CgroupRecord } from '../model/cgroup.js';
import type { NodeFacts, NodeHealth } from '../model/node.js';
import type { PodSandbox, RuntimeStatus, RuntimeVersion } from '../model/runtime.js';
import type { ThrottlingReport } from '../readers/cgroup/throttling.js';
import type { CniState } from '../readers/cni/cni.js';
import type { ContainerRow } from '../view/runtime-view.js';
import type { JournalRecord } from '../readers/journal/record.js';
import type { AttributedOomKill } from '../view/oom.js';
import type { KernelProblems } from '../view/kernel-problems.js';
import { readOnce, type KmsgRing } from '../readers/kmsg/reader.js';
import { isSourceError, type SourceErrorCode } from '../readers/errors.js';
import { type Outcome, withinDeadline } from '../lib/deadline.js';
import type { Deadlines } from '../deadlines.js';
import { THRESHOLDS } from '../rules/thresholds.js';

/**
 * Why a source gave no answer, as the code rules match (never an HTTP status):
 * `source_timeout` when the snapshot's deadline passed, the SourceError's code,
 * or null for an error without one.
 */
export function failureCode(o: Outcome<unknown>): SourceErrorCode | null {
  if (o.ok) return null;
  if (o.timedOut) return 'source_timeout';
  return isSourceError(o.cause) ? o.cause.code : null;
}

interface RuntimeInfo {
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
  runtime: Outcome<RuntimeInfo>;
  pods: Outcome<PodSandbox[]>;
  containers: Outcome<ContainerRow[]>;
  cgroups: Outcome<CgroupRecord[]>;
  throttling: Outcome<ThrottlingReport>;
  host: Outcome<NodeHealth>;
  cni: Outcome<CniState>;
  oom: Outcome<{ kills: AttributedOomKill[]; warnings: string[] }>;
  kubeletJournal: Outcome<{ records: JournalRecord[]; truncated: string | null; warnings: string[] }>;
  /** kernel log problems (rules/kernel-problems.ts's table), attributed; absent where the sources do not read them */
  kernel?: Outcome<KernelProblems>;
  /** conntrack, taint, D/Z processes, kubelet certificates and eviction thresholds, mounts, CRI latency; absent where the sources do not read them */
  facts?: Outcome<NodeFacts>;
  /** items the sources skipped ("cgroups: cgroup /kubepods.slice/...: unreadable (EISDIR), skipped") */
  warnings?: string[];
}

/** The reads behind a snapshot; tests replace any of them. Each may throw (a Problem or any error). */
export interface TriageSources {
  nodeName: string;
  criEndpoint: string | null;
  /** how long the snapshot waits for each source: deadlines(config) */
  deadlines: Deadlines;
  runtime(): Promise<RuntimeInfo>;
  pods(): Promise<PodSandbox[]>;
  containers(): Promise<ContainerRow[]>;
  /** `warnings`: where a source names what it skipped; the answer stands without it */
  cgroups(warnings: string[]): Promise<CgroupRecord[]>;
  throttling(windowMs: number, signal: AbortSignal, warnings: string[]): Promise<ThrottlingReport>;
  host(warnings: string[]): Promise<NodeHealth>;
  /** runtime info (may hold the CNI dirs) or null when the runtime did not answer */
  cni(runtimeInfo: Record<string, unknown> | null): Promise<CniState>;
  /**
   * The kernel ring, when the sources read it: a snapshot reads it once and hands that
   * one read (`ring`) to `oom` and `kernel`, so the OOM kills and the kernel problems
   * are judged from the same records, and a large ring costs one read, not two.
   */
  kmsg?: KmsgRing;
  oom(signal: AbortSignal, ring?: KmsgRing): Promise<{ kills: AttributedOomKill[]; warnings: string[] }>;
  kubeletJournal(sinceUs: number, signal: AbortSignal): Promise<{ records: JournalRecord[]; truncated: string | null; warnings: string[] }>;
  /** kernel log problems; optional: a snapshot without it has no kernel findings */
  kernel?(signal: AbortSignal, ring?: KmsgRing): Promise<KernelProblems>;
  /** node facts (readers/node/facts.ts); optional: a snapshot without them has no node-facts findings */
  facts?(signal: AbortSignal, warnings: string[]): Promise<NodeFacts>;
}

/** At most this many warnings per source in a report: a node with 10,000 bad cgroups says so, briefly. */
const MAX_SOURCE_WARNINGS = 50;

function prefixed(key: string, list: readonly string[]): string[] {
  const unique = [...new Set(list)];
  const out = unique.slice(0, MAX_SOURCE_WARNINGS).map((w) => `${key}: ${w}`);
  if (unique.length > MAX_SOURCE_WARNINGS) out.push(`${key}: ${unique.length - MAX_SOURCE_WARNINGS} more warnings`);
  return out;
}

export interface GatherOptions {
  windowMs: number;
  now?: number;
  /** tighter (or looser) bounds than the sources' table, for a caller with a budget of its own */
  deadlines?: Partial<Deadlines>;
}

export async function gatherSnapshot(src: TriageSources, opts: GatherOptions): Promise<TriageSnapshot> {
  const nowMs = opts.now ?? Date.now();
  const d = { ...src.deadlines, ...opts.deadlines };
  const sinceUs = (nowMs - THRESHOLDS.journalWindowMinutes * 60_000) * 1000;
  // the one ring read of this snapshot; it is let go (its signal aborted) once every reader has answered or is late
  const ringDone = new AbortController();
  const ring = src.kmsg ? readOnce(src.kmsg, ringDone.signal) : undefined;
  const runtimeP = withinDeadline(() => src.runtime(), d.runtimeStatus, 'runtime');
  const w = { cgroups: [] as string[], throttling: [] as string[], host: [] as string[], facts: [] as string[] };
  const kernelP = src.kernel ? withinDeadline((signal) => src.kernel!(signal, ring), d.kernelLog, 'kernel log problems') : null;
  const factsP = src.facts ? withinDeadline((signal) => src.facts!(signal, w.facts), d.nodeFacts, 'node facts') : null;
  const [runtime, pods, containers, cgroups, throttling, host, cni, oom, kubeletJournal, kernel, facts] = await Promise.all([
    runtimeP,
    withinDeadline(() => src.pods(), d.runtimeLists, 'pod sandboxes'),
    withinDeadline(() => src.containers(), d.containerRows, 'containers'),
    withinDeadline(() => src.cgroups(w.cgroups), d.cgroups, 'cgroups'),
    withinDeadline((signal) => src.throttling(opts.windowMs, signal, w.throttling), d.throttling + opts.windowMs, 'throttling'),
    withinDeadline(() => src.host(w.host), d.nodeHealth, 'node health'),
    runtimeP.then((r) => withinDeadline(() => src.cni(r.ok ? r.value.status.info : null), d.cni, 'CNI state')),
    withinDeadline((signal) => src.oom(signal, ring), d.kernelLog, 'kernel OOM kills'),
    withinDeadline((signal) => src.kubeletJournal(sinceUs, signal), d.journal, 'kubelet journal'),
    kernelP, // optional sources: null where the sources do not read them
    factsP,
  ]);
  ringDone.abort();
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
