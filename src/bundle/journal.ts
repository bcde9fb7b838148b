/**
 * The kubelet and containerd journal as a raw section, in journal export format.
 */
import { spawn } from 'node:child_process';
import { ExportParser } from '../readers/journal/export-parser.js';
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
 * The kubelet and containerd journal since --since, in journal export format, run
 * with the journalctl JournalSource resolves (host one through chroot, bundled, or
 * --journalctl), an argument array, never a shell. Read through the export parser
 * and written back entry by entry with values redacted, bounded in bytes and time.
 */
export async function captureJournal(ctx: CaptureContext, sinceMs: number): Promise<void> {
  const journal = ctx.o.deps.journal;
  const since = Math.floor((Date.now() - sinceMs) / 1000);
  const args = ['--no-pager', '--output=export', ...JOURNAL_UNITS.map((u) => `--unit=${u}`), `--since=@${since}`];
  let argv: string[] = ['journalctl', ...args];
  const section = await storeRaw(ctx, 'journal', 'kubelet and containerd journal', { argv }, 'raw/journal/kubelet-containerd.export', async () => {
    const cmd = await journal.resolve();
    argv = [cmd.file, ...cmd.args, ...args];
    const cap = Math.max(0, Math.min(CAPTURE_LIMITS.journalBytes, ctx.w.room()));
    return runJournalctl(argv, cap, ctx.signal);
  });
  section.source = { argv: argv.map((a) => a.slice(0, 4096)) };
  if (section.error === undefined && section.bytes === 0 && !section.trimmed && section.warnings?.length) section.error = section.warnings.join('; ').slice(0, 4000);
}

async function runJournalctl(argv: string[], cap: number, signal: AbortSignal | undefined): Promise<{ text: string; warnings?: string[]; trimmed?: string }> {
  const [file, ...args] = argv as [string, ...string[]];
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', SYSTEMD_COLORS: '0', SYSTEMD_PAGER: '', TZ: 'UTC' } });
  const exit = new Promise<{ code: number | null; error?: NodeJS.ErrnoException }>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ code: null, error }));
    child.once('close', (code) => resolve({ code }));
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    if (stderr.length < 16 * 1024) stderr += s;
  });
  let trimmed: string | undefined;
  const stop = (why?: string) => {
    if (why && !trimmed) trimmed = why;
    child.kill('SIGTERM');
  };
  const timer = setTimeout(() => stop(`journalctl stopped at the ${CAPTURE_LIMITS.journalDeadlineMs} ms deadline`), CAPTURE_LIMITS.journalDeadlineMs);
  const onAbort = () => stop();
  signal?.addEventListener('abort', onAbort, { once: true });
  const parser = new ExportParser();
  const out: Buffer[] = [];
  let bytes = 0;
  try {
    if (child.pid !== undefined) {
      for await (const chunk of child.stdout! as AsyncIterable<Buffer>) {
        if (trimmed) continue; // drain until exit
        for (const e of parser.push(chunk)) {
          const b = exportEntry(e);
          if (bytes + b.length > cap) {
            stop(`stopped at ${bytes} bytes (journal bound ${CAPTURE_LIMITS.journalBytes}, or the size budget left)`);
            break;
          }
          out.push(b);
          bytes += b.length;
        }
      }
    }
    const r = await exit;
    if (r.error) throw new Error(`cannot run ${file}: ${r.error.code ?? r.error.message}`);
    const warnings = stderr.split('\n').map((l) => l.trim()).filter((l) => l && l !== '-- No entries --');
    if (!trimmed && r.code !== 0 && !(r.code === 1 && /No journal files were found/.test(stderr))) throw new Error(`journalctl exited with ${r.code}: ${warnings.join('; ') || 'no message'}`);
    return { text: Buffer.concat(out).toString('utf8'), ...(warnings.length ? { warnings } : {}), ...(trimmed ? { trimmed } : {}) };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      child.kill('SIGKILL');
      await exit;
    }
  }
}
