/**
 * The node bundle's layout, shared by the writer (capture.ts) and the
 * reader (read.ts). A bundle is a gzip'd ustar archive of plain files only:
 *
 *   api/<path>[@<query>].json|.txt   the answer of one read route, body byte for byte
 *   raw/cri/<Call>.json              normalized CRI records (what the routes used)
 *   raw/kmsg.ndjson                  kernel log records, one JSON per line
 *   raw/cgroup/sys/fs/cgroup/...     the interface files of every kubepods cgroup
 *   raw/journal/kubelet-containerd.export   journalctl --output=export since --since
 *   raw/podlogs/<container id>.log   the tail of each container's CRI log file
 *   manifest.json                    last: what every section came from, sizes, errors
 *
 * The manifest is written last because only then are the sizes, errors and trims
 * known; a reader indexes the whole archive anyway (it is bounded by its budget).
 */
import { z } from 'zod';
import type { DurationRange } from '../validate.js';

export const FORMAT_VERSION = 1;
export const MANIFEST_NAME = 'manifest.json';

/** Default capture budget (uncompressed archive bytes), --max-size. */
export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
/** What a reader accepts by default: twice a default capture (bundles are held in memory). */
export const DEFAULT_READ_MAX_BYTES = 128 * 1024 * 1024;
/** The manifest itself may be at most this large when read. */
export const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;
/** Entries a reader accepts at most (a 1,000-container capture has ~30,000). */
export const MAX_ENTRIES = 200_000;
/** Longest entry name accepted (ustar with a PAX header allows more; we never write more). */
export const MAX_NAME = 512;

/**
 * Sections in the order they are written, which is the reverse of the order in
 * which they lose room when the budget runs out: container log tails are trimmed
 * first, then the journal, then cgroup raw files, kernel records, CRI records;
 * route answers last (they are written first and so always fit first).
 */
export const SECTION_KINDS = ['route', 'cri', 'kmsg', 'cgroup', 'journal', 'podlog'] as const;
export type SectionKind = (typeof SECTION_KINDS)[number];
export const TRIM_ORDER: readonly SectionKind[] = [...SECTION_KINDS].reverse();

const bounded = (n: number) => z.string().max(n);

const sectionSchema = z.object({
  kind: z.enum(SECTION_KINDS),
  /** route: the URL injected; cri: the call; others: a short name */
  name: bounded(4096),
  /** where it came from: the route, the CRI call, the host path(s), the journalctl argv */
  source: z.object({
    route: bounded(4096).optional(),
    cri: bounded(128).optional(),
    file: bounded(4096).optional(),
    argv: z.array(bounded(4096)).max(64).optional(),
  }),
  /** entry name in the archive (absent when the section failed or was trimmed before any byte) */
  path: bounded(MAX_NAME).optional(),
  /** route answers: HTTP status and content type exactly as the API gave them */
  status: z.number().int().min(100).max(599).optional(),
  contentType: bounded(256).optional(),
  /** ISO time the section was taken, and how long it took */
  time: bounded(64),
  ms: z.number().min(0),
  /** bytes stored (uncompressed) */
  bytes: z.number().int().min(0),
  /** files in a multi-file section (cgroup, podlog) */
  files: z.number().int().min(0).optional(),
  /** `<redacted` markers in what was stored */
  redacted: z.number().int().min(0),
  error: bounded(4096).optional(),
  warnings: z.array(bounded(4096)).max(100).optional(),
  /** why part or all of it is missing: the size budget, or a bound of its own */
  trimmed: bounded(512).optional(),
});
export type Section = z.infer<typeof sectionSchema>;

export const manifestSchema = z.object({
  kind: z.literal('nodetruth-bundle'),
  formatVersion: z.literal(FORMAT_VERSION),
  version: bounded(64),
  node: bounded(253),
  capturedAt: bounded(64),
  finishedAt: bounded(64),
  /** what "one moment" means for this bundle: the answers share their source reads, made between capturedAt and finishedAt (absent in older bundles) */
  moment: bounded(1024).optional(),
  argv: z.array(bounded(4096)).max(256),
  hostRoot: bounded(4096),
  since: bounded(64),
  maxBytes: z.number().int().min(0),
  /** uncompressed bytes of every entry but the manifest */
  bytes: z.number().int().min(0),
  trimOrder: z.array(z.enum(SECTION_KINDS)),
  /** section kinds that lost entries to the budget */
  trimmed: z.array(z.enum(SECTION_KINDS)),
  redaction: z.object({
    marker: bounded(64),
    total: z.number().int().min(0),
    byKind: z.record(z.string().max(16), z.number().int().min(0)),
    policy: bounded(1024),
  }),
  sections: z.array(sectionSchema).max(MAX_ENTRIES),
  /** present when the capture stopped before every section was done: its deadline (--capture-timeout) passed */
  incomplete: z.object({ reason: z.enum(['deadline']), detail: bounded(1024) }).optional(),
});
export type Manifest = z.infer<typeof manifestSchema>;

/**
 * The index key of a request: path plus its query parameters sorted, so
 * `?b=1&a=2` and `?a=2&b=1` find the same stored answer; `format=json` is the default.
 */
export function routeKey(url: string, text?: boolean): string {
  const q = url.indexOf('?');
  const pathname = (q < 0 ? url : url.slice(0, q)).replace(/\/+$/, '') || '/';
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  // `text`: what the text plugin decided (wantsText: ?format, else Accept: text/plain)
  if (text !== undefined) params.delete('format');
  if (text === true) params.set('format', 'text');
  if (params.get('format') === 'json') params.delete('format');
  const pairs = [...params].sort(([a, av], [b, bv]) => (a === b ? av.localeCompare(bv) : a.localeCompare(b)));
  return pairs.length === 0 ? pathname : `${pathname}?${new URLSearchParams(pairs).toString()}`;
}

/** The archive name of a route answer: readable after `tar xzf` (api/v1/pods.json). */
export function routeEntryName(url: string, contentType: string, n: number): string {
  const q = url.indexOf('?');
  const pathname = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : `@${url.slice(q + 1)}`;
  const ext = /json/.test(contentType) ? 'json' : 'txt';
  // our own URLs (hex ids, known parameters); anything else is replaced, and n keeps names unique
  const safe = `${pathname}${query}`.replace(/[^A-Za-z0-9._=&@/-]/g, '_').replace(/\/\.+/g, '/_');
  const name = `api${safe === '/' ? '/root' : safe}`;
  return name.length + 12 > MAX_NAME ? `api/long/${n}.${ext}` : `${name}.${ext}`;
}

/** How many redaction markers a text holds (REDACTED and its "<redacted: why>" variants). */
export function countRedacted(s: string | Buffer): number {
  // a Buffer is searched as bytes: a stored answer of tens of MB is not copied into a string
  const at = (from: number) => (typeof s === 'string' ? s.indexOf('<redacted', from) : s.indexOf('<redacted', from));
  let n = 0;
  for (let i = at(0); i >= 0; i = at(i + 9)) n++;
  return n;
}

/** 64MiB, 512KiB, 1GiB or plain bytes. */
export function parseSize(s: string): number | null {
  const m = /^(\d{1,12})(B|KiB|MiB|GiB|K|M|G)?$/.exec(s.trim());
  if (!m) return null;
  const mult = { B: 1, K: 1024, KiB: 1024, M: 2 ** 20, MiB: 2 ** 20, G: 2 ** 30, GiB: 2 ** 30 }[m[2] ?? 'B']!;
  const n = Number(m[1]) * mult;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** How far back a capture's journal reaches (--since, ?since=): 1 minute to 7 days. */
export const SINCE: DurationRange = { minMs: 60_000, maxMs: 7 * 86_400_000, example: '1h' };
export const SINCE_TEXT = 'a duration from 1m to 7d, such as 1h';

export function defaultBundleName(node: string, at = new Date()): string {
  return `nodetruth-${node}-${at.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')}.tar.gz`;
}

