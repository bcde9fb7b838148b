import { badRequest } from '../../errors.js';
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
 * Throws a 400 Problem naming the parameter.
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
    throw badRequest(`query: at most ${JOURNAL_LIMITS.maxServices} units, got ${units.length}`, { param: 'query' });
  }
  const tailLines = input.tailLines ?? null;
  if (tailLines !== null && (!Number.isInteger(tailLines) || tailLines < 0 || tailLines > JOURNAL_LIMITS.maxTailLines)) {
    throw badRequest(`tailLines: must be an integer between 0 and ${JOURNAL_LIMITS.maxTailLines}`, { param: 'tailLines' });
  }
  const pattern = input.pattern === undefined || input.pattern === '' ? null : validatePattern(input.pattern);

  if (files.length > 0) {
    if (units.length > 0) throw badRequest('query: cannot specify a file and a unit', { param: 'query' });
    if (files.length > 1) throw badRequest('query: cannot specify more than one file', { param: 'query' });
    for (const [name, v] of [
      ['sinceTime', input.sinceTime],
      ['untilTime', input.untilTime],
      ['boot', input.boot],
      ['priority', input.priority],
    ] as const) {
      if (v !== undefined) throw badRequest(`${name}: not supported with a file query`, { param: name });
    }
    if (input.follow) throw badRequest('follow: not supported with a file query', { param: 'follow' });
    return { kind: 'file', file: validateFileQuery(files[0]!), tailLines, pattern };
  }

  const sinceUs = time('sinceTime', input.sinceTime);
  const untilUs = time('untilTime', input.untilTime);
  if (sinceUs !== null && untilUs !== null && sinceUs > untilUs) {
    throw badRequest('untilTime: must be after sinceTime', { param: 'untilTime' });
  }
  const boot = input.boot ?? null;
  if (boot !== null && (!Number.isInteger(boot) || boot > 0 || boot < -100_000)) {
    throw badRequest('boot: must be an integer less than 1 (0 is the current boot, -1 the one before)', { param: 'boot' });
  }
  let priority: string | null = null;
  if (input.priority !== undefined) {
    if (!PRIORITY.test(input.priority)) {
      throw badRequest('priority: expected a level 0-7 or emerg|alert|crit|err|warning|notice|info|debug, or a range FROM..TO', {
        param: 'priority',
      });
    }
    priority = input.priority;
  }
  if (input.follow && untilTime(input)) throw badRequest('untilTime: cannot follow up to a time', { param: 'untilTime' });
  return { kind: 'journal', units, sinceUs, untilUs, tailLines, pattern, boot, priority, follow: Boolean(input.follow), matches: [] };
}

const untilTime = (i: JournalQueryInput) => i.untilTime !== undefined;

export function validateUnit(q: string): string {
  if (q.length > JOURNAL_LIMITS.maxServiceLength) {
    throw badRequest(`query: unit name longer than ${JOURNAL_LIMITS.maxServiceLength} characters`, { param: 'query' });
  }
  if (!UNIT_NAME.test(q) || q.includes('..') || q.endsWith('.')) {
    throw badRequest(`query: ${JSON.stringify(q)} is not a unit name (letters, digits and -_.:@ only, not starting with - or .)`, {
      param: 'query',
    });
  }
  return q;
}

/**
 * A file query is a path relative to /var/log. kubelet securejoins it (so ../
 * is clamped); we refuse `..` outright, as a request for it is never innocent,
 * and HostFs still resolves symlinks inside the host root.
 */
export function validateFileQuery(q: string): string {
  if (q.includes('\0') || q.includes('\\')) throw badRequest('query: invalid characters in file path', { param: 'query' });
  const rel = q.replace(/^\/+/, '').replace(/^var\/log\/+/, '');
  const parts = rel.split('/');
  if (parts.some((p) => p === '..')) throw badRequest('query: a file query may not contain ..', { param: 'query' });
  if (rel === '' || parts.every((p) => p === '' || p === '.')) throw badRequest('query: empty file path', { param: 'query' });
  if (q.length > 4096) throw badRequest('query: file path too long', { param: 'query' });
  return parts.filter((p) => p !== '' && p !== '.').join('/');
}

export function validatePattern(p: string): string {
  if (p.length > JOURNAL_LIMITS.maxPatternLength) {
    throw badRequest(`pattern: longer than ${JOURNAL_LIMITS.maxPatternLength} characters`, { param: 'pattern' });
  }
  if (p.includes('\0') || /[\n\r]/.test(p)) throw badRequest('pattern: control characters are not allowed', { param: 'pattern' });
  // Passed as one --grep=<pattern> argument, so it cannot become an option; a
  // leading dash is still refused as an unmistakable injection attempt.
  if (p.startsWith('-')) throw badRequest('pattern: may not start with "-" (write [-] to match a literal dash)', { param: 'pattern' });
  return p;
}

function time(name: string, v: string | undefined): number | null {
  if (v === undefined) return null;
  const us = parseRfc3339Micros(v);
  if (us === null) throw badRequest(`${name}: expected RFC3339, e.g. 2026-11-29T17:42:28Z`, { param: name });
  return us;
}
