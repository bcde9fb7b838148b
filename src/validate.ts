import { z } from 'zod';
import { formatDuration, parseDuration } from './format.js';

/**
 * Values a user gives (flags, query parameters), checked the same way wherever
 * they arrive: the CLI, the config, the HTTP routes. Each rule is written once.
 */

/** A Kubernetes object name (node, pod): DNS-1123 subdomain, at most 253 characters. */
export const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** A namespace (or a container name): DNS-1123 label, at most 63 characters. */
export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export interface DurationRange {
  minMs: number;
  maxMs: number;
  /** a value to show in the message, e.g. 2s */
  example: string;
}

/** How long CPU throttling is measured by /v1/throttling. */
export const THROTTLING_WINDOW: DurationRange = { minMs: 1000, maxMs: 30_000, example: '5s' };
/** How long triage measures CPU throttling (/v1/triage?window, nodetruth triage --window). */
export const TRIAGE_WINDOW: DurationRange = { minMs: 100, maxMs: 30_000, example: '2s' };

/** "from 100ms to 30s, such as 2s" */
export const rangeText = (r: DurationRange): string => `from ${formatDuration(r.minMs)} to ${formatDuration(r.maxMs)}, such as ${r.example}`;

/** A Go-style duration (2s, 500ms, 1m30s) within [minMs, maxMs], in ms; null otherwise. */
export function durationWithin(text: string, r: Pick<DurationRange, 'minMs' | 'maxMs'>): number | null {
  const ms = parseDuration(text);
  return ms === null || ms < r.minMs || ms > r.maxMs ? null : ms;
}

/** zod: a duration's text → ms within the range, or the message for what was given. */
export const durationSchema = (r: Pick<DurationRange, 'minMs' | 'maxMs'>, message: (given: string) => string) =>
  z
    .string()
    .max(64)
    .transform((s, ctx) => {
      const ms = durationWithin(s, r);
      if (ms === null) {
        ctx.addIssue({ code: 'custom', message: message(s) });
        return z.NEVER;
      }
      return ms;
    });
