import { badParameter } from '../errors.js';
import { JOURNAL_LIMITS, PRIORITY, UNIT_NAME } from './limits.js';
import { parseRfc3339Micros } from './time.js';

/** Raw query parameters, kubelet node-log-query names (as they come from the URL). */
export interface JournalQueryInput {
  query?: string[] | undefined;
  sinceTime?: string | undefined;
  untilTime?: string | undefined;
  tailLines?: number | undefined;
  pattern?: string | undefined;
  boot?: number | undefined;
  priority?: string | undefined;
  follow?: boolean | undefined;
}

/** A validated journal query: units or one file, never both. */
export type JournalQuery =
  | {
      kind: 'journal';
      units: string[];
      sinceUs: number | null;
      untilUs: number | null;
      tailLines: number | null;
      pattern: string | null;
      boot: number | null;
      priority: string | null;
      follow: boolean;
      /** extra journal matches (FIELD=value), used internally, e.g. _TRANSPORT=kernel */
      matches: string[];
      /**
       * newest first (journalctl --reverse), used internally: with `tailLines` and `sinceUs`
       * the only way to the newest records of a window, as journalctl 252 seeks to --since
       * first and so counts --lines from the oldest
       */
      reverse?: boolean;
    }
  | {
      kind: 'file';
      /** the path as asked, relative to /var/log */
      file: string;
      tailLines: number | null;
      pattern: string | null;
    };

/**
 * Validate as kubelet does (validateServices, nodeLogQuery.validate), with its
 * known bug fixed: an absent untilTime stays absent instead of being set to sinceTime.
 * Throws bad_parameter naming the parameter.
 */
export function validateJournalQuery(input: JournalQueryInput): JournalQuery {
  const files: string[] = [];
  const units: string[] = [];
  for (const q of input.query ?? []) {
    // kubelet: a / or \ means a file; whitespace-only queries are ignored
    if (q.includes('/') || q.includes('\\')) files.push(q);
    else if (q.trim() !== '') units.push(validateUnit(q));
  }
  if (units.length > JOURNAL_LIMITS.maxServices) {
    throw badParameter('query', `query: at most ${JOURNAL_LIMITS.maxServices} units, got ${units.length}`);
  }
  const tailLines = input.tailLines ?? null;
  if (tailLines !== null && (!Number.isInteger(tailLines) || tailLines < 0 || tailLines > JOURNAL_LIMITS.maxTailLines)) {
    throw badParameter('tailLines', `tailLines: must be an integer between 0 and ${JOURNAL_LIMITS.maxTailLines}`);
  }
  const pattern = input.pattern === undefined || input.pattern === '' ? null : validatePattern(input.pattern);

  if (files.length > 0) {
    if (units.length > 0) throw badParameter('query', 'query: cannot specify a file and a unit');
    if (files.length > 1) throw badParameter('query', 'query: cannot specify more than one file');
    for (const [name, v] of [
      ['sinceTime', input.sinceTime],
      ['untilTime', input.untilTime],
      ['boot', input.boot],
      ['priority', input.priority],
    ] as const) {
      if (v !== undefined) throw badParameter(name, `${name}: not supported with a file query`);
    }
    if (input.follow) throw badParameter('follow', 'follow: not supported with a file query');
    return { kind: 'file', file: validateFileQuery(files[0]!), tailLines, pattern };
  }

  const sinceUs = time('sinceTime', input.sinceTime);
  const untilUs = time('untilTime', input.untilTime);
  if (sinceUs !== null && untilUs !== null && sinceUs > untilUs) {
    throw badParameter('untilTime', 'untilTime: must be after sinceTime');
  }
  const boot = input.boot ?? null;
  if (boot !== null && (!Number.isInteger(boot) || boot > 0 || boot < -100_000)) {
    throw badParameter('boot', 'boot: must be an integer less than 1 (0 is the current boot, -1 the one before)');
  }
  let priority: string | null = null;
  if (input.priority !== undefined) {
    if (!PRIORITY.test(input.priority)) {
      throw badParameter('priority', 'priority: expected a level 0-7 or emerg|alert|crit|err|warning|notice|info|debug, or a range FROM..TO');
    }
    priority = input.priority;
  }
  if (input.follow && untilTime(input)) throw badParameter('untilTime', 'untilTime: cannot follow up to a time');
  return { kind: 'journal', units, sinceUs, untilUs, tailLines, pattern, boot, priority, follow: Boolean(input.follow), matches: [] };
}

const untilTime = (i: JournalQueryInput) => i.untilTime !== undefined;

/** A journal query the agent makes itself (no client input to validate): nothing set but what `q` sets. */
export function journalQuery(q: Partial<Omit<Extract<JournalQuery, { kind: 'journal' }>, 'kind'>>): Extract<JournalQuery, { kind: 'journal' }> {
  return { kind: 'journal', units: [], sinceUs: null, untilUs: null, tailLines: null, pattern: null, boot: null, priority: null, follow: false, matches: [], ...q };
}

function validateUnit(q: string): string {
  if (q.length > JOURNAL_LIMITS.maxServiceLength) {
    throw badParameter('query', `query: unit name longer than ${JOURNAL_LIMITS.maxServiceLength} characters`);
  }
  if (!UNIT_NAME.test(q) || q.includes('..') || q.endsWith('.')) {
    throw badParameter('query', `query: ${JSON.stringify(q)} is not a unit name (letters, digits and -_.:@ only, not starting with - or .)`);
  }
  return q;
}

/**
 * A file query is a path relative to /var/log. kubelet securejoins it (so ../
 * is clamped); we refuse `..` outright, as a request for it is never innocent,
 * and HostFs still resolves symlinks inside the host root.
 */
export function validateFileQuery(q: string): string {
  if (q.includes('\0') || q.includes('\\')) throw badParameter('query', 'query: invalid characters in file path');
  const rel = q.replace(/^\/+/, '').replace(/^var\/log\/+/, '');
  const parts = rel.split('/');
  if (parts.some((p) => p === '..')) throw badParameter('query', 'query: a file query may not contain ..');
  if (rel === '' || parts.every((p) => p === '' || p === '.')) throw badParameter('query', 'query: empty file path');
  if (q.length > 4096) throw badParameter('query', 'query: file path too long');
  return parts.filter((p) => p !== '' && p !== '.').join('/');
}

function validatePattern(p: string): string {
  if (p.length > JOURNAL_LIMITS.maxPatternLength) {
    throw badParameter('pattern', `pattern: longer than ${JOURNAL_LIMITS.maxPatternLength} characters`);
  }
  if (p.includes('\0') || /[\n\r]/.test(p)) throw badParameter('pattern', 'pattern: control characters are not allowed');
  // Passed as one --grep=<pattern> argument, so it cannot become an option; a
  // leading dash is still refused as an unmistakable injection attempt.
  if (p.startsWith('-')) throw badParameter('pattern', 'pattern: may not start with "-" (write [-] to match a literal dash)');
  return p;
}

function time(name: string, v: string | undefined): number | null {
  if (v === undefined) return null;
  const us = parseRfc3339Micros(v);
  if (us === null) throw badParameter(name, `${name}: expected RFC3339, e.g. 2026-11-29T17:42:28Z`);
  return us;
}
