import { constants, promises as fsp } from 'node:fs';
import type { HostFs } from '../hostfs/hostfs.js';
import { SourceError } from '../errors.js';
import { parseKmsgRecord, splitKmsgText, type KmsgRecord } from './parse.js';

/** A record, or a marker that the ring buffer overwrote records we had not read (EPIPE). */
export type KmsgItem = { kind: 'record'; record: KmsgRecord } | { kind: 'gap'; afterSeq: number | null };

const READ_SIZE = 8192; // > the kernel's record limit (PRINTKRB_RECORD_MAX 1024 + dict); smaller gives EINVAL
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/**
 * Reads the kernel log: /dev/kmsg (one record per read(2), opened O_NONBLOCK so
 * a pending read never holds a libuv thread, which would hang process.exit() until
 * the next kernel message), or a regular file holding one record per line (tests,
 * captures).
 */
export class KmsgReader {
  constructor(
    private readonly hostFs: HostFs,
    /** config.kmsgPath: an absolute path outside the host root, or null for <host-root>/dev/kmsg */
    private readonly kmsgPath: string | null,
  ) {}

  async path(): Promise<string> {
    return this.kmsgPath ?? (await this.hostFs.resolve('/dev/kmsg'));
  }

  /** Open a cursor at the oldest record the ring still holds. */
  async open(): Promise<KmsgCursor> {
    const p = await this.path();
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(p, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      throw new SourceError('source_unavailable', `cannot open the kernel log ${p}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
    const st = await fh.stat();
    return st.isCharacterDevice() ? new DeviceCursor(fh) : new FileCursor(fh);
  }

  private inFlight: Promise<KmsgItem[]> | null = null;

  /**
   * Everything currently readable, oldest first (with gap markers). Concurrent callers
   * share one read of the ring, and so one copy of its records in memory (a full ring is
   * tens of MB of objects; the routes, triage, OOM attribution and a capture all read it).
   * The read needs no signal: it is bounded by the ring (or MAX_FILE_BYTES of a file) and
   * ends at the ring's end (EAGAIN), never waiting for new records. A caller whose signal
   * aborted before it asked gets nothing. Readers must not change the items.
   */
  async readAll(signal?: AbortSignal): Promise<KmsgItem[]> {
    if (signal?.aborted) return [];
    this.inFlight ??= this.readRing().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async readRing(): Promise<KmsgItem[]> {
    const c = await this.open();
    try {
      const out: KmsgItem[] = [];
      for (;;) {
        const batch = await c.next();
        if (batch.length === 0) break;
        for (const it of batch) out.push(it);
      }
      for (const it of c.flush()) out.push(it);
      return out;
    } finally {
      await c.close();
    }
  }
}

/** What reads the whole ring: a KmsgReader, or one read shared by several readers (readOnce). */
export interface KmsgRing {
  readAll(signal?: AbortSignal): Promise<KmsgItem[]>;
}

/**
 * One read of `ring` for every reader of one moment (a triage snapshot's OOM kills
 * and kernel problems): the first call reads, until `signal` aborts; every call gets
 * the same items (readers must not change them). A reader's own signal does not end
 * the shared read: its caller's deadline stops waiting for it.
 */
export function readOnce(ring: KmsgRing, signal: AbortSignal): KmsgRing {
  let read: Promise<KmsgItem[]> | null = null;
  return { readAll: () => (read ??= ring.readAll(signal)) };
}

interface KmsgCursor {
  /** Items readable now; [] at the end (EAGAIN). Call again later to follow. */
  next(): Promise<KmsgItem[]>;
  /** At the end of a one-shot read: whatever was held back waiting for more (a last line without newline). */
  flush(): KmsgItem[];
  close(): Promise<void>;
}

class DeviceCursor implements KmsgCursor {
  private readonly buf = Buffer.allocUnsafe(READ_SIZE);
  private lastSeq: number | null = null;
  constructor(private readonly fh: fsp.FileHandle) {}

  async next(): Promise<KmsgItem[]> {
    const out: KmsgItem[] = [];
    for (let i = 0; i < 4096; i++) {
      let n: number;
      try {
        ({ bytesRead: n } = await this.fh.read(this.buf, 0, READ_SIZE, null));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN' || code === 'EWOULDBLOCK') break;
        if (code === 'EPIPE') {
          // the ring overwrote our position; the next read resumes at the oldest record
          out.push({ kind: 'gap', afterSeq: this.lastSeq });
          continue;
        }
        throw err;
      }
      if (n === 0) break;
      const r = parseKmsgRecord(this.buf.toString('utf8', 0, n));
      if (r) {
        out.push({ kind: 'record', record: r });
        this.lastSeq = r.seq;
      }
    }
    return out;
  }

  flush(): KmsgItem[] {
    return [];
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}

/** A regular file: one record per line; following re-reads what was appended. */
class FileCursor implements KmsgCursor {
  private offset = 0;
  private partial = '';
  constructor(private readonly fh: fsp.FileHandle) {}

  async next(): Promise<KmsgItem[]> {
    const st = await this.fh.stat();
    if (st.size < this.offset) {
      this.offset = 0; // truncated or replaced
      this.partial = '';
    }
    const len = Math.min(st.size - this.offset, MAX_FILE_BYTES);
    if (len <= 0) return [];
    const buf = Buffer.allocUnsafe(len);
    const { bytesRead } = await this.fh.read(buf, 0, len, this.offset);
    this.offset += bytesRead;
    let text = this.partial + buf.toString('utf8', 0, bytesRead);
    const lastNl = text.lastIndexOf('\n');
    // keep an unfinished last line, and the last record (its continuation lines may still come)
    this.partial = lastNl < 0 ? text : text.slice(lastNl + 1);
    text = lastNl < 0 ? '' : text.slice(0, lastNl + 1);
    return splitKmsgText(text).map((record) => ({ kind: 'record' as const, record }));
  }

  flush(): KmsgItem[] {
    const rest = this.partial;
    this.partial = '';
    return splitKmsgText(rest).map((record) => ({ kind: 'record' as const, record }));
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}

/** This boot's id as the journal writes it (_BOOT_ID: 32 hex digits, no dashes), or null when unreadable or not that shape. */
export async function readBootId(hostFs: HostFs): Promise<string | null> {
  const id = (await hostFs.readFile('/proc/sys/kernel/random/boot_id'))?.trim().replace(/-/g, '');
  return id && /^[0-9a-f]{32}$/.test(id) ? id : null;
}

/**
 * Wall-clock µs at boot, so a record's time is bootWallUs + tsUsec. The kernel's
 * printk clock and CLOCK_MONOTONIC agree (neither counts suspend); the agent
 * shares the host's kernel, so its own monotonic clock serves.
 */
export function bootWallUs(): number {
  return Date.now() * 1000 - Number(process.hrtime.bigint() / 1000n);
}
