import { z } from 'zod';
import { ID_PREFIX_PATTERN } from '../readers/cri/ids.js';
import { parseRfc3339Micros } from '../readers/journal/time.js';
import { THRESHOLDS } from '../rules/thresholds.js';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN, durationWithin, rangeText, THROTTLING_WINDOW, TRIAGE_WINDOW, type DurationRange } from '../validate.js';

/** Shared request schemas: every input is validated here before it reaches a call, path or argv. */

const format = z.enum(['json', 'text']).optional().describe('json (default) or text: an aligned table');

/** A querystring object that refuses unknown parameters and accepts ?format. */
export const query = <T extends z.ZodRawShape>(shape: T) => z.strictObject({ ...shape, format });

/** A parameter that may be given several times (?label=a=1&label=b=2). */
export const repeated = (item: z.ZodString, max: number) =>
  z
    .union([item, z.array(item).max(max, `at most ${max} values`)])
    .transform((v): string[] => (Array.isArray(v) ? v : [v]));

/**
 * An integer query parameter within [min, max]: digits only (not 1e3, 0x10, a blank);
 * OpenAPI shows it as an integer with its bounds. `outside` is the reason a value out of
 * range is given (the parameter's name comes first in the answer: "querystring.tailLines: ...").
 */
export const integer = (min: number, max: number, outside = `must be an integer between ${min} and ${max}`) =>
  z
    .preprocess((s) => (typeof s === 'string' && /^-?\d{1,16}$/.test(s) ? Number(s) : s), z.number({ error: 'expected an integer' }).int().min(min, outside).max(max, outside))
    .optional();

/** An RFC 3339 time (kubelet's sinceTime, untilTime), at most 64 characters. */
export const rfc3339 = z
  .string()
  .max(64)
  .refine((s) => parseRfc3339Micros(s) !== null, 'expected RFC3339, e.g. 2026-11-29T17:42:28Z')
  .optional();

const idPrefix = z
  .string()
  .min(1)
  .max(64, 'an id has at most 64 hex characters')
  .regex(ID_PREFIX_PATTERN, 'an id or id prefix is lowercase hex [0-9a-f]');

export const idParams = z.strictObject({ id: idPrefix.describe('an id, or a prefix of one that matches only it') });

/** Kubernetes label key=value, as crictl --label takes it. */
const LABEL = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?=([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
export const labelSelector = repeated(z.string().max(317).regex(LABEL, 'expected key=value (a Kubernetes label)'), 16)
  .transform((pairs) => Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)])))
  .optional();

export const k8sName = z.string().max(253).regex(DNS1123_SUBDOMAIN, 'expected a Kubernetes name (DNS-1123)');
export const k8sNamespace = z.string().max(63).regex(DNS1123_LABEL, 'expected a Kubernetes namespace (DNS-1123 label)');
/** Pod UIDs: API-server UUIDs, or a static pod's 32-hex manifest hash (kubelet's config hash). */
export const podUid = z
  .string()
  .max(36)
  .regex(/^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/, 'expected a pod UID (8-4-4-4-12 lowercase hex, or 32 hex for a static pod)');

/** A ?window=: a duration within the range, in ms; defaultMs when absent. */
const windowParam = (r: DurationRange, defaultMs: number) =>
  z
    .string()
    .max(16)
    .optional()
    .transform((s, ctx) => {
      if (s === undefined) return defaultMs;
      const ms = durationWithin(s, r);
      if (ms === null) {
        ctx.addIssue({ code: 'custom', message: `window must be a duration ${rangeText(r)}, got ${JSON.stringify(s)}` });
        return z.NEVER;
      }
      return ms;
    });

export const throttlingWindow = windowParam(THROTTLING_WINDOW, 5000).describe(`how long CPU throttling is measured: a duration ${rangeText(THROTTLING_WINDOW)} (default 5s)`);
export const triageWindow = windowParam(TRIAGE_WINDOW, THRESHOLDS.defaultWindowMs).describe(`how long CPU throttling is measured: a duration ${rangeText(TRIAGE_WINDOW)} (default 2s)`);
