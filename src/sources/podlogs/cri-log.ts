/**
 * CRI container log files (kubelet/cri-api "CRI log format"), one line each:
 *
 *   <RFC3339Nano> <stdout|stderr> <P|F> <message>
 *
 * P marks a partial line (the runtime split a long line); the parts up to the
 * next F of the same stream make one logical line. Pure.
 */
import { parseRfc3339Micros } from '../journal/time.js';

export interface CriLogLine {
  /** the timestamp as written (RFC3339Nano) */
  time: string;
  /** µs since the epoch, for comparisons */
  us: number;
  stream: 'stdout' | 'stderr';
  partial: boolean;
  message: string;
}

export interface LogEntry {
  time: string;
  stream: 'stdout' | 'stderr';
  message: string;
}

export function parseCriLogLine(line: string): CriLogLine | null {
  const a = line.indexOf(' ');
  if (a < 0) return null;
  const b = line.indexOf(' ', a + 1);
  if (b < 0) return null;
  const stream = line.slice(a + 1, b);
  if (stream !== 'stdout' && stream !== 'stderr') return null;
  const time = line.slice(0, a);
  const us = parseRfc3339Micros(time);
  if (us === null) return null;
  // tag (P/F, possibly followed by ":..." in future formats); message may be empty
  const c = line.indexOf(' ', b + 1);
  const tag = c < 0 ? line.slice(b + 1) : line.slice(b + 1, c);
  const message = c < 0 ? '' : line.slice(c + 1);
  const t = tag.split(':')[0];
  if (t !== 'P' && t !== 'F') return null;
  return { time, us, stream, partial: t === 'P', message };
}

/** Joins P parts per stream into logical lines; feed lines in file order. */
export class LineJoiner {
  private pending: Record<'stdout' | 'stderr', { time: string; parts: string[] } | null> = { stdout: null, stderr: null };

  push(l: CriLogLine): LogEntry | null {
    const p = this.pending[l.stream];
    if (l.partial) {
      if (p) p.parts.push(l.message);
      else this.pending[l.stream] = { time: l.time, parts: [l.message] };
      return null;
    }
    if (p) {
      this.pending[l.stream] = null;
      return { time: p.time, stream: l.stream, message: p.parts.join('') + l.message };
    }
    return { time: l.time, stream: l.stream, message: l.message };
  }

  /** Unfinished partial lines at the end of the input (a container still writing, or killed mid-line). */
  flush(): LogEntry[] {
    const out: LogEntry[] = [];
    for (const s of ['stdout', 'stderr'] as const) {
      const p = this.pending[s];
      if (p) out.push({ time: p.time, stream: s, message: p.parts.join('') });
      this.pending[s] = null;
    }
    return out;
  }
}

/** Text of a CRI log file → logical lines. Lines that are not CRI format are skipped. */
export function parseCriLog(text: string, flushPartial = true): LogEntry[] {
  const j = new LineJoiner();
  const out: LogEntry[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const l = parseCriLogLine(line);
    if (!l) continue;
    const e = j.push(l);
    if (e) out.push(e);
  }
  if (flushPartial) out.push(...j.flush());
  return out;
}

/** kubelet's rotated file suffix: <name>.<20060102-150405>[.gz] */
export const ROTATED = /^(.+)\.(\d{8}-\d{6})(\.gz)?$/;
