/**
 * Journal events: kubelet's and the container runtime's records that matter (warning or worse
 * by klog's letter, logrus' level or the record's priority; the phrases triage knows and a few
 * more of what happens to pods), and systemd's starts, stops and failures of those units.
 * `verbose` takes every record of the units. One journalctl child, bounded like every journal
 * query (bytes, deadline) and to the newest records of the window.
 */
import { containsInOrder } from '../../lib/phrases.js';
import type { Severity } from '../../model/triage.js';
import type { JournalRecord } from '../../readers/journal/record.js';
import { parseRfc3339Micros } from '../../readers/journal/time.js';
import { JOURNAL_MATCH_PREFIX, KUBELET_JOURNAL_PATTERNS, type Phrase } from '../../rules/journal-patterns.js';
import { excerptText, SourceEvents, summaryText, type TimelineQuery } from './window.js';

/** kubelet and the runtimes it may run on (journalctl -u also takes systemd's records about each). */
export const TIMELINE_UNITS = ['kubelet.service', 'containerd.service', 'crio.service'] as const;

/** Records read at most: the newest of the window (a busy kubelet writes ~10 a second). */
export const JOURNAL_SCAN = 50_000;

/** A message longer than this is cut in the event (summary and evidence are cut shorter still). */
export const MESSAGE_CHARS = 64 * 1024;

/** What happens to pods that kubelet and the runtime log at info level: a few literal phrases. */
const NOTABLE: ReadonlyArray<{ kind: string; severity: Severity; phrases: readonly Phrase[] }> = [
  { kind: 'probe-failed', severity: 'warning', phrases: ['Probe failed'] },
  { kind: 'back-off', severity: 'warning', phrases: ['Back-off restarting failed container', 'CrashLoopBackOff', 'back-off'] },
  { kind: 'eviction', severity: 'warning', phrases: ['eviction manager: attempting to reclaim', 'eviction manager: must evict', 'eviction manager: pods', 'Evicted pod'] },
  { kind: 'node-status', severity: 'warning', phrases: ['Node became not ready'] },
  { kind: 'node-status', severity: 'info', phrases: [['Recording event message for node', 'event="Node']] },
  { kind: 'image-pull', severity: 'info', phrases: ['PullImage "', 'Pulling image'] },
  { kind: 'container-killed', severity: 'info', phrases: ['Killing container with a grace period'] },
];

const has = (text: string, ph: Phrase): boolean => (typeof ph === 'string' ? text.includes(ph) : containsInOrder(text, ph));

/** logrus' `level=warning` near the start of a containerd line */
function logrusLevel(text: string): 'warning' | 'error' | 'fatal' | null {
  const i = text.slice(0, 200).indexOf(' level=');
  if (i < 0) return null;
  const w = /^(warning|error|fatal|panic)\b/.exec(text.slice(i + 7, i + 15))?.[1];
  return w === 'panic' ? 'fatal' : ((w as 'warning' | 'error' | 'fatal' | undefined) ?? null);
}

/** systemd (PID 1) about a unit: what its words mean. */
function unitChange(m: string): { kind: string; severity: Severity } | null {
  if (m.startsWith('Started ')) return { kind: 'unit-started', severity: 'info' };
  if (m.startsWith('Stopped ')) return { kind: 'unit-stopped', severity: 'info' };
  if (m.includes('Main process exited')) return { kind: 'unit-exited', severity: 'warning' };
  if (m.includes('Failed with result') || m.startsWith('Failed to start ')) return { kind: 'unit-failed', severity: 'critical' };
  if (m.includes('Scheduled restart job')) return { kind: 'unit-restart', severity: 'warning' };
  if (m.includes('Killing process') || m.includes('State \'stop-sigterm\' timed out')) return { kind: 'unit-killed', severity: 'warning' };
  return null;
}

/** What a record is in a timeline, or null when it is not notable. */
export function classify(r: JournalRecord, verbose: boolean): { kind: string; severity: Severity } | null {
  const m = r.message.slice(0, JOURNAL_MATCH_PREFIX);
  if (r.identifier === 'systemd' && r.aboutUnit !== null) return unitChange(m) ?? (verbose ? { kind: 'unit', severity: 'info' } : null);
  const letter = r.klogSeverity;
  const level = letter === 'F' ? 'fatal' : letter === 'E' ? 'error' : letter === 'W' ? 'warning' : letter === null ? logrusLevel(m) : null;
  if (letter === 'E' || letter === 'W' || letter === 'F') {
    const p = KUBELET_JOURNAL_PATTERNS.find((x) => x.phrases.some((ph) => has(m, ph)));
    if (p) return { kind: p.id, severity: letter === 'F' ? 'critical' : 'warning' };
  }
  const n = NOTABLE.find((x) => x.phrases.some((ph) => has(m, ph)));
  if (n) return { kind: n.kind, severity: level === 'fatal' ? 'critical' : level ? 'warning' : n.severity };
  if (level === 'fatal') return { kind: 'log-fatal', severity: 'critical' };
  if (level === 'error') return { kind: 'log-error', severity: 'warning' };
  if (level === 'warning') return { kind: 'log-warning', severity: 'warning' };
  // priority: journald's own for a record written with one (syslog, sd_journal); a service's stderr is 6
  if (r.priority !== null && r.priority <= 4) return { kind: r.priority <= 3 ? 'log-error' : 'log-warning', severity: r.priority <= 2 ? 'critical' : 'warning' };
  return verbose ? { kind: 'log', severity: 'info' } : null;
}

/** `key="value"` of a klog structured line, bounded; null when absent or not that shape. */
function klogValue(m: string, key: string, shape: RegExp, max: number): string | null {
  const i = m.indexOf(` ${key}="`);
  if (i < 0) return null;
  const from = i + key.length + 3;
  const end = m.indexOf('"', from);
  if (end < 0 || end - from > max) return null;
  const v = m.slice(from, end);
  return shape.test(v) ? v : null;
}
const POD_REF = /^[a-z0-9][a-z0-9-]{0,62}\/[a-z0-9][a-z0-9.-]{0,252}$/;
const UID = /^[0-9a-f-]{32,36}$/;

/** The pod a kubelet line names (pod="ns/name", podUID="..."), if any. */
export function podOfRecord(m: string): { namespace: string | null; name: string | null; uid: string | null } | null {
  const head = m.slice(0, JOURNAL_MATCH_PREFIX * 4);
  const ref = klogValue(head, 'pod', POD_REF, 320);
  const uid = klogValue(head, 'podUID', UID, 36);
  if (!ref && !uid) return null;
  const slash = ref ? ref.indexOf('/') : -1;
  return { namespace: ref ? ref.slice(0, slash) : null, name: ref ? ref.slice(slash + 1) : null, uid };
}

/**
 * Journal records made events as they are read, newest first (journalctl --reverse: the
 * newest records of the window are the ones read): each record is classified and let go,
 * only the events kept (SourceEvents: the newest `limit`), so a read of any size holds no
 * more than the answer can use. A record's sequence is minus its place in the read: the
 * journal's own order, oldest first, among records of one instant.
 */
export class JournalEvents {
  readonly events: SourceEvents;
  /** records longer than MESSAGE_CHARS */
  cut = 0;
  /** records seen */
  private seen = 0;

  constructor(private readonly q: TimelineQuery) {
    this.events = new SourceEvents(q);
  }

  add(r: JournalRecord): void {
    const i = -this.seen++;
    const c = classify(r, this.q.verbose);
    if (!c) return;
    if (r.message.length > MESSAGE_CHARS) this.cut++;
    this.events.add(parseRfc3339Micros(r.time), i, () => {
      const pod = podOfRecord(r.message);
      return {
        source: 'journal',
        kind: c.kind,
        severity: c.severity,
        ...(pod ? { pod } : {}),
        summary: summaryText(`${r.identifier ?? r.unit ?? 'journal'}: ${r.message.slice(0, MESSAGE_CHARS)}`),
        evidence: [{ source: 'journal', cursor: r.cursor, excerpt: excerptText(r.message) }],
      };
    });
  }
}
