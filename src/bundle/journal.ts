/**
 * The kubelet and containerd journal as a raw section, in journal export format.
 */
import { exportArgs } from '../readers/journal/journalctl.js';
import { redactJournalField } from '../readers/journal/record.js';
import { CAPTURE_LIMITS, storeRaw, type CaptureContext } from './writer.js';

const JOURNAL_UNITS = ['kubelet.service', 'containerd.service'];

/** One export-format entry, values redacted as /v1/logs redacts them; text form when the value allows it, the length-prefixed form otherwise. */
function exportEntry(entry: Map<string, string>): Buffer {
  const parts: Buffer[] = [];
  for (const [k, raw] of entry) {
    const v = redactJournalField(k, raw);
    // eslint-disable-next-line no-control-regex
    if (!/[\x00-\x1f\x7f]/.test(v)) parts.push(Buffer.from(`${k}=${v}\n`, 'utf8'));
    else {
      const data = Buffer.from(v, 'utf8');
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(data.length));
      parts.push(Buffer.from(`${k}\n`, 'latin1'), len, data, Buffer.from('\n'));
    }
  }
  parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}

/**
 * The kubelet and containerd journal since --since, in journal export format, read by
 * the agent's one journalctl runner (JournalSource.exportUnits: the journalctl it
 * resolves, an argument array, bounded in bytes and time, the child reaped) and
 * written back entry by entry with values redacted.
 */
export async function captureJournal(ctx: CaptureContext, sinceMs: number): Promise<void> {
  const journal = ctx.o.deps.journal;
  const sinceUs = Math.floor((Date.now() - sinceMs) / 1000) * 1e6;
  const args = exportArgs(JOURNAL_UNITS, sinceUs);
  let argv: string[] = ['journalctl', ...args];
  const section = await storeRaw(ctx, 'journal', 'kubelet and containerd journal', { argv }, 'raw/journal/kubelet-containerd.export', async () => {
    const cmd = await journal.resolve();
    argv = [cmd.file, ...cmd.args, ...args];
    const cap = Math.max(0, Math.min(CAPTURE_LIMITS.journalBytes, ctx.w.room()));
    const out: Buffer[] = [];
    let bytes = 0;
    const r = await journal.exportUnits(JOURNAL_UNITS, sinceUs, { deadlineMs: CAPTURE_LIMITS.journalDeadlineMs, maxBytes: cap }, ctx.signal, (e) => {
      const b = exportEntry(e);
      if (bytes + b.length > cap) return false;
      out.push(b);
      bytes += b.length;
      return true;
    });
    const trimmed =
      r.truncated === 'deadline'
        ? `journalctl stopped at the ${CAPTURE_LIMITS.journalDeadlineMs} ms deadline`
        : r.truncated === 'bytes'
          ? `stopped at ${bytes} bytes (journal bound ${CAPTURE_LIMITS.journalBytes}, or the size budget left)`
          : undefined;
    return { text: Buffer.concat(out).toString('utf8'), ...(r.warnings.length ? { warnings: r.warnings } : {}), ...(trimmed ? { trimmed } : {}) };
  });
  section.source = { argv: argv.map((a) => a.slice(0, 4096)) };
  if (section.error === undefined && section.bytes === 0 && !section.trimmed && section.warnings?.length) section.error = section.warnings.join('; ').slice(0, 4000);
}
