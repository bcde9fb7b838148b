/** Triage records: findings with the evidence they came from, and a verdict. */

export type Severity = 'critical' | 'warning' | 'info';
export type Verdict = 'ok' | 'warning' | 'critical';

/** Where a fact came from; exactly the reference that lets someone look again. */
export interface Evidence {
  /** cri, cgroup, proc, statfs, file, http, journal, kmsg, agent */
  source: string;
  /** a host path (file or directory) */
  path?: string;
  /** a CRI call, an HTTP request */
  call?: string;
  /** a journal cursor */
  cursor?: string;
  /** a /dev/kmsg sequence number */
  seq?: number;
  /** the raw text (a line, a file's content, an error), verbatim and bounded */
  excerpt: string;
}

/** What a finding is about, when it is about a pod or container. */
export interface Subject {
  namespace?: string;
  pod?: string;
  podUid?: string;
  container?: string;
  containerId?: string;
  path?: string;
}

export interface Finding {
  /** the rule's id, stable across releases (e.g. runtime-unreachable, crash-loop) */
  id: string;
  severity: Severity;
  title: string;
  detail: string;
  evidence: Evidence[];
  /** the next step to take */
  hint: string;
  subject?: Subject;
  /**
   * The stretch of /v1/timeline around what the finding saw, where its rule knows the times:
   * a since/until pair for the timeline's own parameters (a few minutes before the first
   * record, for the cause, and one after the last).
   */
  window?: { since: string; until: string };
}

/** A source's Outcome (lib/deadline.ts) as the report shows it: answered within its deadline or not, and how long it took. */
export interface SourceOutcome {
  ok: boolean;
  durationMs: number;
  error?: string;
}

export interface TriageReport {
  node: string;
  takenAt: string;
  /** the throttling measurement window, in ms */
  windowMs: number;
  verdict: Verdict;
  counts: Record<Severity, number>;
  findings: Finding[];
  /** each source of the snapshot: answered or not, how long it took */
  sources: Record<string, SourceOutcome>;
}
