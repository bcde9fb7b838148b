import { spawn, type ChildProcess } from 'node:child_process';
import { badParameter, SourceError } from '../errors.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { ExportParser, type ExportEntry } from './export-parser.js';
import { JOURNAL_LIMITS } from './limits.js';
import type { JournalQuery } from './query.js';
import { resolveJournalctl, type JournalctlCommand } from './resolve.js';
import { OUTPUT_FIELDS, toJournalRecord, type JournalRecord } from './record.js';

export type JournalQueryJ = Extract<JournalQuery, { kind: 'journal' }>;

const usec = (us: number) => `@${Math.floor(us / 1e6)}.${String(us % 1e6).padStart(6, '0')}`;

/** The journalctl arguments for a validated query; every value is one argv element. */
export function journalctlArgs(q: JournalQueryJ): string[] {
  const a = ['--no-pager', '--output=export', `--output-fields=${OUTPUT_FIELDS.join(',')}`];
  for (const u of q.units) a.push(`--unit=${u}`);
  if (q.sinceUs !== null) a.push(`--since=${usec(q.sinceUs)}`);
  if (q.untilUs !== null) a.push(`--until=${usec(q.untilUs)}`);
  if (q.boot !== null) a.push(`--boot=${q.boot}`);
  if (q.priority !== null) a.push(`--priority=${q.priority}`);
  if (q.pattern !== null) a.push(`--grep=${q.pattern}`);
  if (q.tailLines !== null) a.push(`--lines=${q.tailLines}`);
  else if (q.follow && q.sinceUs === null) a.push('--lines=10');
  if (q.follow) a.push('--follow');
  if (q.reverse) {
    if (q.follow) throw new Error('a follow query cannot be read newest first');
    a.push('--reverse');
  }
  for (const m of q.matches) {
    if (!/^[A-Z0-9_]+=[^\n]*$/.test(m)) throw new Error(`bad internal journal match ${m}`);
    a.push(m);
  }
  return a;
}

/** The journalctl arguments of a whole-unit export (every field), as exportUnits runs them. */
export const exportArgs = (units: string[], sinceUs: number): string[] => ['--no-pager', '--output=export', ...units.map((u) => `--unit=${u}`), `--since=${usec(sinceUs)}`];

interface JournalResult {
  records: JournalRecord[];
  warnings: string[];
  /** why the answer is incomplete: our byte bound, or the whole-request deadline */
  truncated: 'bytes' | 'deadline' | null;
  command: string[];
}

interface JournalSourceOptions {
  hostFs: HostFs;
  journalctl?: string;
  deadlineMs?: number;
  maxBytes?: number;
  /** non-follow journalctl children at once (default JOURNAL_LIMITS.maxChildren) */
  maxChildren?: number;
}

const ENV = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', SYSTEMD_COLORS: '0', SYSTEMD_PAGER: '', TZ: 'UTC' };

/** The journal, read through a journalctl child process (as kubelet's node log query does). */
export class JournalSource {
  private readonly hostFs: HostFs;
  private readonly setting: string;
  private command: Promise<JournalctlCommand> | null = null;
  readonly deadlineMs: number;
  readonly maxBytes: number;
  readonly maxChildren: number;
  /** pids of journalctl children currently running (tests check they are all reaped) */
  readonly live = new Set<number>();
  /** non-follow children running now, counted against maxChildren until reaped */
  private bounded = 0;

  constructor(o: JournalSourceOptions) {
    this.hostFs = o.hostFs;
    this.setting = o.journalctl ?? 'auto';
    this.deadlineMs = o.deadlineMs ?? JOURNAL_LIMITS.deadlineMs;
    this.maxBytes = o.maxBytes ?? JOURNAL_LIMITS.maxBytes;
    this.maxChildren = o.maxChildren ?? JOURNAL_LIMITS.maxChildren;
  }

  /** Take one of the maxChildren slots (busy when none is free); the release is idempotent. */
  private slot(): () => void {
    if (this.bounded >= this.maxChildren) {
      throw new SourceError('busy', `at most ${this.maxChildren} journal queries run at once; ${this.bounded} are running, retry shortly`, { retryAfterSeconds: 1 });
    }
    this.bounded++;
    let done = false;
    return () => {
      if (!done) this.bounded--;
      done = true;
    };
  }

  resolve(): Promise<JournalctlCommand> {
    this.command ??= resolveJournalctl(this.hostFs, this.setting).catch((err) => {
      this.command = null;
      throw err;
    });
    return this.command;
  }

  /** Compile the pattern with the same journalctl (PCRE2) against no journal: "Bad pattern" → bad_parameter. */
  async checkPattern(pattern: string, signal?: AbortSignal): Promise<void> {
    const noJournal = (a: string) => (a.startsWith('--root=') ? '--root=/nonexistent-nodetruth' : a);
    const r = await this.collect(['--quiet', '--lines=0', `--grep=${pattern}`], { deadlineMs: 5000, maxBytes: 64 * 1024 }, signal, () => true, noJournal);
    if (signal?.aborted || r.code === null) return;
    classifyStderr(r.stderr, 0, { pattern, boot: null });
  }

  /** Run a bounded, non-follow query and collect the records. */
  async query(q: JournalQueryJ, signal?: AbortSignal): Promise<JournalResult> {
    const records: JournalRecord[] = [];
    const r = await this.scan(q, signal, (rec) => void records.push(rec));
    // journalctl 252 prints `--lines=N --grep=P` newest first (it searches backwards and
    // forgets to turn round); kubelet's node log query inherits that. Restore oldest-first,
    // as for a query read newest first.
    if ((q.reverse || (q.pattern !== null && q.tailLines !== null)) && records.length > 1 && records[0]!.time > records.at(-1)!.time) records.reverse();
    return { records, warnings: r.warnings, truncated: r.truncated, command: r.command };
  }

  /**
   * A bounded, non-follow query whose records are handed to `onRecord` as they are parsed,
   * none kept here: what the caller keeps is all the query holds. Records come in
   * journalctl's order: oldest first, newest first with `reverse`, and newest first for
   * `pattern` with `tailLines` on journalctl 252 (query() turns both round). `count` is the
   * records handed over.
   */
  async scan(q: JournalQueryJ, signal: AbortSignal | undefined, onRecord: (r: JournalRecord) => void): Promise<Omit<JournalResult, 'records'> & { count: number }> {
    if (q.follow) throw new Error('use follow() for follow queries');
    let count = 0;
    const r = await this.collect(journalctlArgs(q), { deadlineMs: this.deadlineMs, maxBytes: this.maxBytes }, signal, (e) => {
      count++;
      onRecord(toJournalRecord(e));
    });
    if (!r.truncated && !signal?.aborted && r.code !== null) classifyStderr(r.stderr, r.code, q);
    return { warnings: warningsOf(r.stderr), truncated: r.truncated, command: r.command, count };
  }

  /**
   * Every field of every entry of `units` since `sinceUs`, oldest first, handed to
   * `onEntry` as parsed (false from it stops journalctl: its own bound). Bounded by
   * `bounds` like a query; journalctl's complaints are thrown as a query's are.
   */
  async exportUnits(units: string[], sinceUs: number, bounds: { deadlineMs: number; maxBytes: number }, signal: AbortSignal | undefined, onEntry: (e: ExportEntry) => boolean): Promise<Omit<JournalResult, 'records'>> {
    const r = await this.collect(exportArgs(units, sinceUs), bounds, signal, onEntry);
    if (!r.truncated && !signal?.aborted && r.code !== null) classifyStderr(r.stderr, r.code, { pattern: null, boot: null });
    return { warnings: warningsOf(r.stderr), truncated: r.truncated, command: r.command };
  }

  /**
   * The one non-follow runner: journalctl with `args` after the command's own, its export
   * output parsed entry by entry, no byte past `maxBytes` parsed, killed at `deadlineMs`
   * or when `signal` aborts, and reaped before this returns; counted against maxChildren.
   * `code` is null when nothing was started (the signal had aborted). `leading` rewrites
   * each of the command's own leading arguments (its --root).
   */
  private async collect(
    args: string[],
    bounds: { deadlineMs: number; maxBytes: number },
    signal: AbortSignal | undefined,
    onEntry: (e: ExportEntry) => boolean | void,
    leading: (a: string) => string = (a) => a,
  ): Promise<{ code: number | null; stderr: string; truncated: JournalResult['truncated']; command: string[] }> {
    const cmd = await this.resolve();
    const argv = [...cmd.args.map(leading), ...args];
    const command = [cmd.file, ...argv];
    // nobody is waiting for the answer any more: start nothing
    if (signal?.aborted) return { code: null, stderr: '', truncated: null, command };
    const release = this.slot();
    let child: ChildProcess;
    try {
      child = this.spawn(cmd.file, argv);
    } catch (err) {
      release();
      throw err;
    }
    const parser = new ExportParser();
    let truncated: JournalResult['truncated'] = null;
    const stop = (why: 'bytes' | 'deadline' | null) => {
      if (why && !truncated) truncated = why;
      child.kill('SIGTERM');
    };
    const timer = setTimeout(() => stop('deadline'), bounds.deadlineMs);
    const onAbort = () => stop(null);
    signal?.addEventListener('abort', onAbort, { once: true });
    const stderr = collectStderr(child);
    try {
      for await (const chunk of child.stdout! as AsyncIterable<Buffer>) {
        if (truncated) continue; // drain until exit
        // Parse no byte past the bound, so the answer stays bounded whatever the pipe's chunk size.
        const room = Math.max(0, bounds.maxBytes - parser.bytes);
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
        for (const e of parser.push(part)) {
          if (onEntry(e) === false) {
            stop('bytes');
            break;
          }
        }
        if (part.length < chunk.length) stop('bytes');
      }
      const code = await exited(child);
      return { code, stderr: stderr(), truncated, command };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      await this.reap(child).finally(release);
    }
  }

  /**
   * Follow: yields records as journalctl prints them, until `signal` aborts or
   * journalctl ends. journalctl is killed by its pid and reaped before this returns.
   * The first value yielded is the list of warnings seen so far (stderr, after a short grace).
   */
  async *follow(q: JournalQueryJ, signal: AbortSignal): AsyncGenerator<JournalRecord, void, undefined> {
    const cmd = await this.resolve();
    const argv = [...cmd.args, ...journalctlArgs({ ...q, follow: true })];
    if (signal.aborted) return;
    const child = this.spawn(cmd.file, argv);
    const onAbort = () => child.kill('SIGTERM');
    signal.addEventListener('abort', onAbort, { once: true });
    const parser = new ExportParser();
    const stderr = collectStderr(child);
    try {
      for await (const chunk of child.stdout! as AsyncIterable<Buffer>) {
        for (const e of parser.push(chunk)) yield toJournalRecord(e);
      }
      const code = await exited(child);
      if (!signal.aborted) classifyStderr(stderr(), code, q);
    } finally {
      signal.removeEventListener('abort', onAbort);
      await this.reap(child);
    }
  }

  private spawn(file: string, argv: string[]): ChildProcess {
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: ENV });
    child.on('error', () => {}); // reported below or by exited()
    if (child.pid === undefined) throw new SourceError('source_unavailable', `cannot run ${file}: not found or not executable`);
    const pid = child.pid;
    this.live.add(pid);
    child.once('exit', () => this.live.delete(pid));
    return child;
  }

  private async reap(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    if (child.pid === undefined) return; // never started (spawn error)
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 2000);
    try {
      await exited(child);
    } finally {
      clearTimeout(t);
    }
  }
}

/** Resolve with the exit code (signals → 128+n); a spawn failure becomes source_unavailable. */
function exited(child: ChildProcess): Promise<number> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  if (child.signalCode !== null) return Promise.resolve(128);
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => resolve(code ?? 128));
    child.once('error', (err: NodeJS.ErrnoException) => {
      if (child.pid === undefined) reject(new SourceError('source_unavailable', `cannot run journalctl: ${err.code ?? err.message}`));
    });
  });
}

function collectStderr(child: ChildProcess, max = 64 * 1024): () => string {
  let text = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (s: string) => {
    if (text.length < max) text += s.slice(0, max - text.length);
  });
  // a spawn error is reported by exited(); keep it from being an uncaught 'error'
  child.on('error', () => {});
  return () => text;
}

const warningsOf = (stderr: string) =>
  stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && l !== '-- No entries --');

/** Turn journalctl's complaints into the right HTTP meaning. */
function classifyStderr(stderr: string, code: number, q: { pattern: string | null; boot: number | null }): void {
  const bad = /^Bad pattern .*$/m.exec(stderr);
  if (bad) throw badParameter('pattern', `pattern: ${bad[0]}`);
  if (/without pattern matching support/i.test(stderr)) throw new SourceError('source_unsupported', 'pattern: this journalctl was built without PCRE2 (--grep)');
  if (/specified boot .*not available|No such boot ID|Failed to look up boot/i.test(stderr)) {
    throw new SourceError('not_found', `boot ${q.boot}: not in the journal`);
  }
  if (code === 0) return;
  // --grep exits 1 when nothing matched; so does an empty journal ("No journal files were found.")
  if (code === 1 && (q.pattern !== null || /No journal files were found/.test(stderr) || stderr.trim() === '')) return;
  throw new SourceError('source_unavailable', `journalctl exited with ${code}: ${warningsOf(stderr).join('; ') || 'no message'}`);
}
