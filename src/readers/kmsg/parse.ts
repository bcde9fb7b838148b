/**
 * /dev/kmsg records (Documentation/ABI/testing/dev-kmsg):
 *
 *   PRI,SEQ,TS_USEC,FLAGS[,more];text\n
 *    KEY=value\n            (continuation lines: the record's dictionary)
 *
 * Level is PRI & 7, facility PRI >> 3. Bytes < 0x20, >= 0x7f and the backslash
 * are escaped as \xNN, so a multi-line message (the OOM report's memory.stat
 * dump) arrives as one line with \x0a inside. Pure.
 */
export interface KmsgRecord {
  seq: number;
  level: number;
  facility: number;
  /** µs since boot (the kernel's local clock) */
  tsUsec: number;
  /** '-' for a whole record, 'c' for a continuation fragment (old kernels) */
  flags: string;
  /** the message, unescaped (may contain newlines) */
  text: string;
  /** continuation lines, e.g. SUBSYSTEM, DEVICE (most records have none: one shared empty object, never to be changed) */
  dict: Readonly<Record<string, string>>;
}

/**
 * A full ring is 10^5 records and more, all held while a reading uses them: a record keeps
 * its fields only (not the line as read, which they hold already) and, without
 * continuation lines, the one empty dictionary.
 */
const NO_DICT: Readonly<Record<string, string>> = Object.freeze({});

const HEADER = /^(\d+),(\d+),(\d+),([^,;]*)(?:,[^;]*)?;/;

/** Parse one record (as one read() returns it, or one line plus its continuation lines). */
export function parseKmsgRecord(raw: string): KmsgRecord | null {
  const body = raw.endsWith('\n') ? raw.slice(0, -1) : raw;
  const m = HEADER.exec(body);
  if (!m) return null;
  const pri = Number(m[1]);
  const rest = body.slice(m[0].length);
  const lines = rest.split('\n');
  let dict = NO_DICT;
  for (const l of lines.slice(1)) {
    if (!l.startsWith(' ')) continue;
    const eq = l.indexOf('=');
    if (eq <= 1) continue;
    if (dict === NO_DICT) dict = {};
    (dict as Record<string, string>)[l.slice(1, eq)] = unescapeKmsg(l.slice(eq + 1));
  }
  return {
    seq: Number(m[2]),
    level: pri & 7,
    facility: pri >> 3,
    tsUsec: Number(m[3]),
    flags: m[4]!,
    text: unescapeKmsg(lines[0]!),
    dict,
  };
}

/** Undo the kernel's \xNN escaping, then decode UTF-8 (printk text is bytes). */
export function unescapeKmsg(s: string): string {
  if (!s.includes('\\x')) return s;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x5c && s[i + 1] === 'x' && /^[0-9a-fA-F]{2}$/.test(s.slice(i + 2, i + 4))) {
      bytes.push(parseInt(s.slice(i + 2, i + 4), 16));
      i += 3;
    } else if (c < 0x80) {
      bytes.push(c);
    } else {
      for (const b of Buffer.from(s[i]!, 'utf8')) bytes.push(b);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * Split text holding one record per line (a kmsg capture, a fixture file) into
 * records: a line starting with a space continues the record before it.
 * Lines that are not records are skipped.
 */
export function splitKmsgText(text: string): KmsgRecord[] {
  const out: KmsgRecord[] = [];
  let cur: string | null = null;
  const flush = () => {
    if (cur === null) return;
    const r = parseKmsgRecord(cur);
    if (r) out.push(r);
    cur = null;
  };
  for (const line of text.split('\n')) {
    if (line.startsWith(' ') && cur !== null) {
      cur += '\n' + line;
      continue;
    }
    flush();
    if (line !== '') cur = line;
  }
  flush();
  return out;
}

export const LEVEL_NAMES = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'] as const;
