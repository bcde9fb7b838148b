/** Timeline records: what happened on the node, each event with the record it came from. */
import type { Evidence, Severity } from './triage.js';

/**
 * The layers a timeline merges, in the order events of one instant are listed: the kernel's
 * own records first (a cause is most often there), then what the runtime, kubelet and the API
 * server made of it.
 */
export const TIMELINE_SOURCES = ['kernel', 'oom', 'runtime', 'journal', 'kube'] as const;
export type TimelineSource = (typeof TIMELINE_SOURCES)[number];

export interface TimelinePod {
  namespace: string | null;
  name: string | null;
  uid: string | null;
}

interface TimelineContainer {
  name: string | null;
  id: string | null;
  attempt: number | null;
}

export interface TimelineEvent {
  /** RFC 3339, UTC, microseconds */
  time: string;
  source: TimelineSource;
  /** container-created, container-exited, oom-kill, kernel-hung-task, unit-started, kubelet-warning, ... */
  kind: string;
  severity: Severity;
  pod?: TimelinePod;
  container?: TimelineContainer;
  /** one line, bounded */
  summary: string;
  /** the records it came from: CRI call and id, kmsg sequence, journal cursor */
  evidence: Evidence[];
}

/** How wall-clock times were given to records that carry time since boot (the kernel's). */
export interface TimelineClock {
  /** btime: /proc/stat's boot time under the host root (whole seconds); agent: the agent's own clocks (same kernel) */
  kernel: 'btime' | 'agent';
  /** the wall-clock time of boot used */
  bootTime: string;
  detail: string;
  /**
   * The journal's own pairing for this boot, where it holds kernel records of it: its newest
   * records' wall-clock stamps minus their kernel stamps (µs since boot), the smallest of them
   * (journald stores a record a little after the kernel wrote it). More than 1 s from
   * `bootTime` means the kernel's clock stood still (a suspend) or the wall clock stepped since
   * boot; a warning says so.
   */
  journal?: { bootTime: string; differenceMs: number; records: number };
}

export interface Timeline {
  observedAt: string;
  since: string;
  until: string;
  /** events answered at most */
  limit: number;
  /** every record of the journal units, not only the notable ones; evidence in the text form */
  verbose: boolean;
  clock: TimelineClock;
  /** oldest first; equal times in source order, then each source's own sequence */
  events: TimelineEvent[];
  /** true when the window held more events than `limit`: the newest were kept */
  truncated: boolean;
  /** each source asked: answered, failed or skipped, and how long it took */
  /** `skipped`: a source left out because the node gives it nothing to read (no API server), not asked for by name */
  sources: Partial<Record<TimelineSource, { ok: boolean; events: number; ms: number; error?: string; skipped?: string }>>;
  warnings: string[];
}
