import { redactArgs, redactLogText } from '../../redact.js';
import type { ExportEntry } from './export-parser.js';
import { formatMicros } from './time.js';

/** One journal entry as nodetruth returns it. */
export interface JournalRecord {
  /** RFC3339, UTC, microseconds */
  time: string;
  /** _SYSTEMD_UNIT: the unit whose process wrote it */
  unit: string | null;
  /** UNIT: the unit a systemd (PID 1) message is about, e.g. "Started kubelet.service" */
  aboutUnit: string | null;
  identifier: string | null;
  pid: number | null;
  /** syslog priority 0-7; journald stores a service's stderr as 6 */
  priority: number | null;
  bootId: string | null;
  transport: string | null;
  message: string;
  cursor: string;
  /** klog's severity letter (I, W, E, F) when the message has a klog header */
  klogSeverity: 'I' | 'W' | 'E' | 'F' | null;
  /** µs since boot of the kernel record itself (kernel transport), for matching /dev/kmsg */
  monotonicUs: number | null;
}

/** The fields nodetruth asks journalctl for (export always adds cursor, timestamps and boot id). */
export const OUTPUT_FIELDS = [
  'MESSAGE',
  'PRIORITY',
  'SYSLOG_IDENTIFIER',
  '_SYSTEMD_UNIT',
  'UNIT',
  '_PID',
  'SYSLOG_PID',
  '_COMM',
  '_TRANSPORT',
  '_SOURCE_MONOTONIC_TIMESTAMP',
] as const;

// klog header: Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg
const KLOG = /^([IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d{6}\s+\d+ [^\s\]]+:\d+\] /;

export function klogSeverity(message: string): JournalRecord['klogSeverity'] {
  const m = KLOG.exec(message);
  return m ? (m[1] as 'I' | 'W' | 'E' | 'F') : null;
}

const int = (s: string | undefined): number | null => {
  if (s === undefined || s === '') return null;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : null;
};

/**
 * One journal field's value as every copy of it leaves the agent (a record of
 * /v1/logs, triage's quotes, a bundle's raw journal): the free-text rules, and a
 * command line's rules for _CMDLINE. Cursors, timestamps and ids are not text.
 */
export function redactJournalField(name: string, value: string): string {
  if (name.startsWith('__') || name === '_BOOT_ID' || name === '_MACHINE_ID') return value;
  if (name === '_CMDLINE') return redactArgs([value])[0]!;
  return redactLogText(value);
}

const field = (e: ExportEntry, name: string): string | undefined => {
  const v = e.get(name);
  return v === undefined ? undefined : redactJournalField(name, v);
};

export function toJournalRecord(e: ExportEntry): JournalRecord {
  const message = field(e, 'MESSAGE') ?? '';
  const realtime = int(e.get('__REALTIME_TIMESTAMP')) ?? 0;
  const transport = e.get('_TRANSPORT') ?? null;
  return {
    time: formatMicros(realtime),
    unit: field(e, '_SYSTEMD_UNIT') ?? null,
    aboutUnit: field(e, 'UNIT') ?? null,
    identifier: field(e, 'SYSLOG_IDENTIFIER') ?? field(e, '_COMM') ?? null,
    pid: int(e.get('_PID')) ?? int(e.get('SYSLOG_PID')),
    priority: int(e.get('PRIORITY')),
    bootId: e.get('_BOOT_ID') ?? null,
    transport,
    message,
    cursor: e.get('__CURSOR') ?? '',
    klogSeverity: klogSeverity(message),
    monotonicUs: transport === 'kernel' ? (int(e.get('_SOURCE_MONOTONIC_TIMESTAMP')) ?? int(e.get('__MONOTONIC_TIMESTAMP'))) : null,
  };
}
