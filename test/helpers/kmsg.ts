import type { KmsgRecord } from '../../src/readers/kmsg/parse.js';

/**
 * The record as /dev/kmsg gives it (`PRI,SEQ,TS,FLAGS;text` and its ` KEY=value` lines):
 * the inverse of parseKmsgRecord, for writing captured rings back as fixtures. The kernel
 * writes every byte below 0x20, from 0x7f, and the backslash as \xNN (printk's
 * msg_print_ext_body), so the line is the one read.
 */
export function formatKmsgRecord(r: KmsgRecord): string {
  const lines = [`${(r.facility << 3) | r.level},${r.seq},${r.tsUsec},${r.flags};${escapeKmsg(r.text)}`];
  for (const [k, v] of Object.entries(r.dict)) lines.push(` ${k}=${escapeKmsg(v)}`);
  return lines.join('\n');
}

function escapeKmsg(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) out += b < 0x20 || b >= 0x7f || b === 0x5c ? `\\x${b.toString(16).padStart(2, '0')}` : String.fromCharCode(b);
  return out;
}
