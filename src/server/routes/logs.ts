import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { isSourceError, RUNTIME_DOWN, SourceError } from '../../readers/errors.js';
import { joinSummary, RuntimeNameBook } from '../../view/runtime-index.js';
import { validateJournalQuery, validateFileQuery } from '../../readers/journal/query.js';
import { readLogFile } from '../../readers/journal/file-log.js';
import { chooseLogBackend, readUnitFiles } from '../../readers/journal/backend.js';
import { compileKernelPattern, KERNEL_LIMITS, MAX_KERNEL_TAIL } from '../../view/kernel-log.js';
import { PODLOG_LIMITS, type LogLocation } from '../../readers/podlogs/podlogs.js';
import { JOURNAL_LIMITS, PRIORITY } from '../../readers/journal/limits.js';
import { parseRfc3339Micros } from '../../readers/journal/time.js';
import type { AppDeps } from '../app.js';
import { followLimiter, sendFollow } from '../follow.js';
import { requestSignal } from '../request-signal.js';
import { escapeTerminal } from '../../format.js';
import { idParams, integer, query, repeated, rfc3339 } from '../schemas.js';

/** "true"/"false"/"1"/"0" as a query parameter */
const bool = z
  .enum(['true', 'false', '1', '0', ''])
  .transform((s) => s === 'true' || s === '1' || s === '')
  .optional();
const text = (max: number) => z.string().max(max).optional();

export const logRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {

  app.get(
    '/v1/logs',
    {
      schema: {
        summary: "The journal (or a file under /var/log), with kubelet's node log query parameters",
        querystring: query({
          query: repeated(z.string().max(4096), 16).optional().describe('unit (repeatable, at most 4), or one file path under /var/log'),
          sinceTime: rfc3339.describe('RFC3339'),
          untilTime: rfc3339.describe('RFC3339, not before sinceTime'),
          tailLines: integer(0, JOURNAL_LIMITS.maxTailLines).describe('the newest lines'),
          pattern: text(4096).describe('PCRE2 regular expression (journalctl --grep)'),
          boot: integer(-100_000, 0, 'must be an integer less than 1 (0 is the current boot, -1 the one before)').describe('0 this boot, -1 the one before, ...'),
          priority: z
            .string()
            .max(32)
            .regex(PRIORITY, 'expected a level 0-7 or emerg|alert|crit|err|warning|notice|info|debug, or a range FROM..TO')
            .optional()
            .describe('0-7 or emerg..debug, or a range FROM..TO'),
          follow: bool.describe('stream new records'),
        }),
      },
      config: { table: (b: { records?: Array<{ time: string; identifier: string | null; pid: number | null; message: string }>; lines?: string[] }) => logText(b) },
    },
    async (req, reply) => {
      const { format: _f, ...params } = req.query;
      const q = validateJournalQuery(params);
      if (q.kind === 'file') {
        return readLogFile(deps.hostFs, validateFileQuery(q.file), q.tailLines, q.pattern);
      }
      // a node without a journal: the unit's log file, saying so; none: 503 naming what was looked for
      const backend = await chooseLogBackend(deps.hostFs, q.units);
      if (backend.kind === 'file') {
        if (q.follow) throw new SourceError('source_unsupported', `follow: ${backend.why}; ${backend.files.map((f) => f.path).join(', ')} can be read without follow`);
        return readUnitFiles(deps.hostFs, backend, q.units, q.tailLines, q.pattern);
      }
      // kubelet inside k3s: the unit that holds its records
      if (backend.units) q.units = backend.units;
      if (!q.follow) {
        // the journalctl child ends with the request: killed and reaped when the client goes away
        const r = await deps.journal.query(q, requestSignal(req));
        return { source: 'journal' as const, records: r.records, warnings: [...backend.warnings, ...r.warnings], truncated: r.truncated, command: r.command };
      }
      if (q.pattern !== null) await deps.journal.checkPattern(q.pattern, requestSignal(req));
      const release = followLimiter(deps).acquire();
      return sendFollow(req, reply, deps, (signal) => deps.journal.follow(q, signal), release);
    },
  );

  app.get(
    '/v1/kernel',
    {
      schema: {
        summary: 'Kernel log records from /dev/kmsg (older ones from the journal)',
        description: 'The newest records whose text fits in limitBytes are answered; when older ones were left out the answer says `truncated: "bytes"` and a warning says how many.',
        querystring: query({
          sinceSeq: integer(0, Number.MAX_SAFE_INTEGER, 'must be 0 or more').describe('first kmsg sequence number'),
          tailLines: integer(0, MAX_KERNEL_TAIL).describe('the newest records'),
          limitBytes: integer(1, KERNEL_LIMITS.maxLimitBytes).describe(`bytes of record text answered, the newest records that fit (default ${KERNEL_LIMITS.defaultLimitBytes})`),
          pattern: text(1024).describe('RE2 regular expression (case-insensitive unless it has a capital letter)'),
          follow: bool.describe('stream new records'),
        }),
      },
      config: { table: (b: { records?: Array<{ time: string; levelName: string; seq: number | null; text: string }> }) => (b.records ?? []).map((r) => `${r.time} ${r.levelName.padEnd(7)} [${r.seq ?? '-'}] ${escapeTerminal(r.text)}`).join('\n') + '\n' },
    },
    async (req, reply) => {
      const { sinceSeq, tailLines, limitBytes, pattern, follow } = req.query;
      const q = { sinceSeq: sinceSeq ?? null, tailLines: tailLines ?? null, limitBytes: limitBytes ?? null, pattern: pattern ? await compileKernelPattern(pattern) : null };
      if (!follow) return deps.kernel.read(q, requestSignal(req));
      const release = followLimiter(deps).acquire();
      return sendFollow(req, reply, deps, (signal) => deps.kernel.follow(q, signal), release, (i) => i.kind);
    },
  );

  app.get(
    '/v1/oom',
    {
      schema: { summary: 'OOM kills from the kernel log, attributed to pods and containers, and memory.events of live cgroups', querystring: query({}) },
      config: {
        table: (b: { kills: Array<{ time: string | null; pid: number; process: string; podNamespace: string | null; podName: string | null; containerName: string | null; podUid: string | null; global: boolean }> }) => ({
          columns: ['TIME', 'PID', 'PROCESS', 'POD', 'CONTAINER', 'POD UID', 'KIND'],
          rows: b.kills.map((k) => [k.time ?? '', String(k.pid), k.process, k.podName ? `${k.podNamespace}/${k.podName}` : '', k.containerName ?? '', k.podUid ?? '', k.global ? 'global' : 'memcg']),
        }),
      },
    },
    async (req) => {
      const signal = requestSignal(req);
      const eventWarnings: string[] = [];
      const [r, events, join] = await Promise.all([
        deps.oom.kills(signal),
        deps
          .oom.memoryEvents(eventWarnings)
          .catch((err: Error) => ({ error: err.message })),
        deps.index.join(),
      ]);
      // by the kernel's pod UID and container ID: the runtime's names, or the last list's when it is late
      const names = (podUid: string | null, containerId: string | null) => (podUid ? join.names : RuntimeNameBook.EMPTY).of({ podUid: podUid ?? '', containerId });
      const warnings = [...r.warnings];
      if ('error' in events) warnings.push(`memory.events: ${events.error}`);
      warnings.push(...eventWarnings);
      return {
        kills: r.kills.map((k) => ({ ...k, ...names(k.podUid, k.containerId) })),
        memoryEvents: 'error' in events ? [] : events.map((e) => ({ ...e, ...names(e.podUid, e.containerId) })),
        runtime: joinSummary(join),
        sources: r.sources,
        warnings,
      };
    },
  );

  app.get(
    '/v1/containers/:id/logs',
    {
      schema: {
        summary: "A container's CRI log file (partial lines joined); works with the runtime down",
        params: idParams,
        querystring: query({
          tailLines: integer(0, PODLOG_LIMITS.maxTailLines).describe('logical lines (P parts joined)'),
          sinceTime: rfc3339.describe('RFC3339'),
          previous: bool.describe('the attempt before this one'),
          timestamps: bool.describe('prefix each line with its RFC3339Nano time (text format)'),
          stream: z.enum(['stdout', 'stderr', 'all']).optional().describe('default all'),
          follow: bool.describe('stream new lines'),
          limitBytes: integer(1, Number.MAX_SAFE_INTEGER, 'must be at least 1').describe(`bytes of message text returned (default ${PODLOG_LIMITS.defaultLimitBytes}); with tailLines or sinceTime the newest lines that fit`),
        }).refine((q) => !(q.follow && q.previous), { path: ['follow'], message: 'cannot follow a previous attempt' }),
      },
      config: {
        // a line cut at the 1 MiB line cap (PODLOG_LIMITS.maxLineBytes) says so in text too
        table: (b: { entries: Array<{ time: string; message: string; cut?: boolean }>; timestamps: boolean }) =>
          b.entries.map((e) => (b.timestamps ? `${e.time} ${escapeTerminal(e.message)}` : escapeTerminal(e.message)) + (e.cut ? ' [cut: longer than the line cap]' : '')).join('\n') + (b.entries.length ? '\n' : ''),
      },
    },
    async (req, reply) => {
      const q = req.query;
      const sinceUs = q.sinceTime === undefined ? null : parseRfc3339Micros(q.sinceTime);
      const loc = await locate(deps, req.params.id);
      const file = q.previous ? deps.podLogs.previousPath(loc) : loc.logPath;
      const pq = { tailLines: q.tailLines ?? null, sinceUs, stream: q.stream ?? 'all', limitBytes: q.limitBytes ?? null, previous: Boolean(q.previous) } as const;
      if (!q.follow) {
        const r = await deps.podLogs.read(file, pq);
        return { containerId: loc.containerId, via: loc.via, attempt: q.previous ? (loc.attempt ?? 1) - 1 : loc.attempt, timestamps: Boolean(q.timestamps), ...r };
      }
      const release = followLimiter(deps).acquire();
      return sendFollow(req, reply, deps, (signal) => deps.podLogs.follow(file, pq, signal), release);
    },
  );
};

/** The runtime's logPath when it answers; kubelet's /var/log/containers links when it does not. */
async function locate(deps: AppDeps, prefix: string): Promise<LogLocation> {
  if (deps.runtime) {
    try {
      const row = await deps.runtime.resolveContainer(prefix);
      const status = await deps.runtime.cri.containerStatus(row.id, false);
      if (status.logPath) return { containerId: row.id, logPath: status.logPath, attempt: status.attempt, via: 'runtime' };
    } catch (err) {
      // down or wedged: exactly when logs matter; not_found: removed, its links may remain
      if (!isSourceError(err, 'not_found', ...RUNTIME_DOWN)) throw err;
      if (err.code === 'not_found') {
        try {
          return await deps.podLogs.locateWithoutRuntime(prefix);
        } catch {
          throw err;
        }
      }
    }
  }
  return deps.podLogs.locateWithoutRuntime(prefix).catch((err: unknown) => {
    if (isSourceError(err, 'not_found') && !deps.runtime) throw new SourceError('not_found', `${err.message}; no CRI socket configured`);
    throw err;
  });
}

/*
 * The text forms of the log routes: one record a line, as journalctl -o short and
 * kubectl logs print them. Every field a process or tenant wrote (message, identifier,
 * a /var/log line) passes escapeTerminal: a newline inside a message is written `\n`,
 * so a record can neither forge the line after it nor send its terminal a control
 * sequence; the JSON form has the text exactly as the source holds it.
 */
function logText(b: { records?: Array<{ time: string; identifier: string | null; pid: number | null; message: string }>; lines?: string[] }): string {
  if (b.lines) return b.lines.map((l) => escapeTerminal(l)).join('\n') + (b.lines.length ? '\n' : '');
  return (b.records ?? []).map((r) => `${r.time} ${r.identifier === null ? '-' : escapeTerminal(r.identifier)}${r.pid !== null ? `[${r.pid}]` : ''}: ${escapeTerminal(r.message)}`).join('\n') + '\n';
}
