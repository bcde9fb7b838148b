/**
 * Streaming parser of journald's export format (`journalctl -o export`):
 *
 *   FIELD=text value\n                  (a value without newlines or control bytes)
 *   FIELD\n<u64 little-endian length><bytes>\n   (binary-safe: newlines, invalid UTF-8)
 *   \n                                   (end of entry)
 *
 * Chunks may split anywhere, including inside a multi-byte UTF-8 character or
 * inside the 8-byte length; values are decoded only once complete. Pure: feed
 * it buffers, it returns finished entries.
 */
export type ExportEntry = Map<string, string>;

const NL = 0x0a;

export class ExportParser {
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;
  private entry: ExportEntry = new Map();
  /** bytes consumed in total (for bounds) */
  bytes = 0;

  /** Feed a chunk; returns the entries it completed. */
  push(chunk: Buffer): ExportEntry[] {
    this.bytes += chunk.length;
    this.buf = this.pos < this.buf.length ? Buffer.concat([this.buf.subarray(this.pos), chunk]) : chunk;
    this.pos = 0;
    const out: ExportEntry[] = [];
    const buf = this.buf;
    for (;;) {
      const nl = buf.indexOf(NL, this.pos);
      if (nl < 0) break;
      if (nl === this.pos) {
        // empty line: end of entry
        this.pos = nl + 1;
        if (this.entry.size > 0) out.push(this.entry);
        this.entry = new Map();
        continue;
      }
      const eq = buf.indexOf(0x3d /* = */, this.pos);
      if (eq >= 0 && eq < nl) {
        this.entry.set(buf.toString('latin1', this.pos, eq), buf.toString('utf8', eq + 1, nl));
        this.pos = nl + 1;
        continue;
      }
      // binary field: name\n, u64 LE size, data, \n
      const dataStart = nl + 1 + 8;
      if (dataStart > buf.length) break;
      const size = Number(buf.readBigUInt64LE(nl + 1));
      if (dataStart + size + 1 > buf.length) break;
      this.entry.set(buf.toString('latin1', this.pos, nl), buf.toString('utf8', dataStart, dataStart + size));
      this.pos = dataStart + size + 1; // skip the trailing \n
    }
    return out;
  }

  /** At end of input: an entry not closed by an empty line (journalctl killed mid-way) is dropped. */
  get pendingBytes(): number {
    return this.buf.length - this.pos;
  }
}
