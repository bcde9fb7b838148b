import type { HostFs } from '../readers/hostfs/hostfs.js';
import type { JournalSource } from '../readers/journal/journalctl.js';
import { journalQuery } from '../readers/journal/query.js';
import { formatMicros } from '../readers/journal/time.js';
import { LEVEL_NAMES, type KmsgRecord } from '../readers/kmsg/parse.js';
import { bootWallUs, readBootId, type KmsgItem, type KmsgReader } from '../readers/kmsg/reader.js';
import { sleep } from '../lib/concurrency.js';
import { compileUserPattern, type UserPattern } from '../readers/user-pattern.js';
import { redactLogText } from '../redact.js';

/** A kernel log record as /v1/kernel returns it. */
interface KernelRecord {
  /** kmsg sequence number; null for records only the journal still holds */
  seq: number | null;
  time: string;
  monotonicUs: number;
  level: number;
  levelName: string;
  facility: number;
  text: string;
  dict: Record<string, string>;
  source: 'kmsg' | 'journal';
  cursor: string | null;
}

type KernelItem = { kind: 'record'; record: KernelRecord } | { kind: 'gap'; afterSeq: number | null };

interface KernelQuery {
  sinceSeq: number | null;
  tailLines: number | null;
  /** RE2 syntax, matched off the event loop (lib/pattern.ts) */
  pattern: UserPattern | null;
  /** bytes of record text answered at most (the newest records that fit); null: KERNEL_LIMITS.defaultLimitBytes */
  limitBytes?: number | null;
}

interface KernelResult {
  records: KernelRecord[];
  /** ring-buffer overruns seen while reading (EPIPE): records were lost between these */
  gaps: Array<{ afterSeq: number | null }>;
  /** the oldest sequence number the ring buffer still held */
  oldestSeq: number | null;
  /** 'bytes': older records were left out to keep the answer within limitBytes */
  truncated: 'bytes' | null;
  warnings: string[];
}

export const MAX_KERNEL_TAIL = 100_000;

/**
 * A ring buffer set large (log_buf_len=16M and more on big machines) answers tens of MB of
 * JSON, built in memory (the debug pod's agent has a 96 MiB heap, and a capture builds the
 * JSON and the text answer at once): an answer keeps the newest records whose text fits
 * limitBytes. The default holds a default ring several times over (128 KiB to 1 MiB on
 * common kernels).
 */
export const KERNEL_LIMITS = {
  defaultLimitBytes: 2 * 1024 * 1024,
  maxLimitBytes: 16 * 1024 * 1024,
} as const;

/** The newest records whose text fits `limit` bytes; how many older ones were left out. */
function newestWithin<R extends { text: string }>(records: R[], limit: number): { kept: R[]; left: number } {
  let bytes = 0;
  let i = records.length;
  while (i > 0) {
    const n = Buffer.byteLength(records[i - 1]!.text);
    if (bytes + n > limit) break;
    bytes += n;
    i--;
  }
  return { kept: i === 0 ? records : records.slice(i), left: i };
}

/**
 * journalctl-like smart case (case-insensitive unless the pattern has a capital
 * letter outside escapes), RE2 syntax, linear-time matching: a JS RegExp here
 * would let `(a+)+$` against a long run of `a` pin the agent for minutes.
 */
export function compileKernelPattern(p: string): Promise<UserPattern> {
  return compileUserPattern(p);
}

/**
 * The kernel log: /dev/kmsg for what the ring buffer holds, the journal's
 * kernel transport (this boot) for older records the ring no longer has.
 */
export class KernelLog {
  constructor(
    private readonly reader: KmsgReader,
    private readonly hostFs: HostFs,
    private readonly journal: JournalSource | null,
    private readonly bootUs: () => number = bootWallUs,
  ) {}

  /** A record as it leaves the agent: its text through the free-text redaction every log line passes. */
  toRecord(r: KmsgRecord, boot = this.bootUs()): KernelRecord {
    return {
      seq: r.seq,
      time: formatMicros(boot + r.tsUsec),
      monotonicUs: r.tsUsec,
      level: r.level,
      levelName: LEVEL_NAMES[r.level] ?? String(r.level),
      facility: r.facility,
      text: redactLogText(r.text),
      dict: r.dict,
      source: 'kmsg',
      cursor: null,
    };
  }

  async read(q: KernelQuery, signal?: AbortSignal): Promise<KernelResult> {
    const items = await this.reader.readAll(signal);
    const boot = this.bootUs();
    const gaps: KernelResult['gaps'] = [];
    let kept: KmsgRecord[] = [];
    let oldest: KmsgRecord | null = null;
    for (const it of items) {
      if (it.kind === 'gap') {
        gaps.push({ afterSeq: it.afterSeq });
        continue;
      }
      oldest ??= it.record;
      if (q.sinceSeq !== null && it.record.seq < q.sinceSeq) continue;
      kept.push(it.record);
    }
    const warnings: string[] = [];
    if (q.pattern) {
      // a tail searches from the newest record and stops at tailLines matches
      const m = await q.pattern.filter(kept, (r) => r.text, { limit: q.tailLines, fromEnd: q.tailLines !== null, signal });
      kept = m.items;
      warnings.push(...m.warnings);
    } else if (q.tailLines !== null && kept.length > q.tailLines) {
      kept = kept.slice(kept.length - q.tailLines);
    }
    // bounded before the records are made: only what can be answered is copied
    const limit = q.limitBytes ?? KERNEL_LIMITS.defaultLimitBytes;
    const fromRing = newestWithin(kept, limit);
    kept = fromRing.kept;
    let left = fromRing.left;
    let records: KernelRecord[] = kept.map((r) => this.toRecord(r, boot));
    // History the ring no longer holds: sequence numbers start at 0 at boot, so an
    // oldest record with seq > 0 means older ones were overwritten.
    const lost = oldest !== null && oldest.seq > 0;
    const wantOlder = left === 0 && (q.sinceSeq !== null ? oldest !== null && q.sinceSeq < oldest.seq : q.tailLines === null || records.length < q.tailLines);
    if (lost && wantOlder && this.journal) {
      try {
        const older = await this.fromJournal(oldest!, q, boot, warnings, signal);
        records = [...older, ...records];
      } catch (err) {
        warnings.push(`journal fallback for older kernel records failed: ${(err as Error).message}`);
      }
    }
    if (q.tailLines !== null) records = q.tailLines === 0 ? [] : records.slice(-q.tailLines);
    const answered = newestWithin(records, limit);
    records = answered.kept;
    left += answered.left;
    if (left > 0) warnings.push(`the oldest ${left} records left out to keep the answer within ${limit} bytes of text; ask sinceSeq or limitBytes (at most ${KERNEL_LIMITS.maxLimitBytes}) for them`);
    return { records, gaps, oldestSeq: oldest?.seq ?? null, truncated: left > 0 ? 'bytes' : null, warnings };
  }

  private async fromJournal(oldest: KmsgRecord, q: KernelQuery, boot: number, warnings: string[], signal?: AbortSignal): Promise<KernelRecord[]> {
    const bootId = await readBootId(this.hostFs);
    if (!bootId) throw new Error('cannot read the boot id');
    const res = await this.journal!.query(
      journalQuery({ untilUs: boot + oldest.tsUsec, tailLines: q.tailLines ?? 10_000, matches: ['_TRANSPORT=kernel', `_BOOT_ID=${bootId}`] }),
      signal,
    );
    let older = res.records.filter((r) => (r.monotonicUs ?? Infinity) < oldest.tsUsec);
    if (q.pattern) {
      const m = await q.pattern.filter(older, (r) => r.message, { limit: q.tailLines, fromEnd: q.tailLines !== null, signal });
      older = m.items;
      warnings.push(...m.warnings);
    }
    return older.map((r) => ({
        seq: null,
        time: formatMicros(boot + r.monotonicUs!),
        monotonicUs: r.monotonicUs!,
        level: r.priority ?? 6,
        levelName: LEVEL_NAMES[r.priority ?? 6] ?? '',
        facility: 0,
        text: r.message,
        dict: {},
        source: 'journal' as const,
        cursor: r.cursor,
      }));
  }

  /** Follow by polling the non-blocking fd; yields records after `sinceSeq` (or the last `tailLines`). */
  async *follow(q: KernelQuery, signal: AbortSignal, pollMs = 250): AsyncGenerator<KernelItem, void, undefined> {
    const cursor = await this.reader.open();
    try {
      const boot = this.bootUs();
      const first: KmsgItem[] = [];
      for (;;) {
        const b = await cursor.next();
        if (b.length === 0) break;
        first.push(...b);
      }
      let backlog = first.filter((i) => i.kind === 'gap' || q.sinceSeq === null || i.record.seq >= q.sinceSeq);
      if (q.pattern) {
        const recs = backlog.filter(isRecord);
        const tail = q.sinceSeq === null ? (q.tailLines ?? 10) : null;
        const hit = new Set<KmsgItem>((await q.pattern.filter(recs, (i) => i.record.text, { limit: tail, fromEnd: tail !== null, signal })).items);
        backlog = backlog.filter((i) => i.kind === 'gap' || hit.has(i));
      }
      if (q.sinceSeq === null) backlog = backlog.slice(-(q.tailLines ?? 10)).filter(() => (q.tailLines ?? 10) > 0);
      for (const i of backlog) yield i.kind === 'gap' ? i : { kind: 'record', record: this.toRecord(i.record, boot) };
      while (!signal.aborted) {
        await sleep(pollMs, signal);
        if (signal.aborted) break;
        const batch = await cursor.next();
        const hit = q.pattern ? new Set<KmsgItem>((await q.pattern.filter(batch.filter(isRecord), (i) => i.record.text, { signal })).items) : null;
        for (const i of batch) {
          if (i.kind === 'gap') yield i;
          else if (!hit || hit.has(i)) yield { kind: 'record', record: this.toRecord(i.record, boot) };
        }
      }
    } finally {
      await cursor.close();
    }
  }
}

const isRecord = (i: KmsgItem): i is Extract<KmsgItem, { kind: 'record' }> => i.kind === 'record';
