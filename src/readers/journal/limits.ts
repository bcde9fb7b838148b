/**
 * kubelet's node log query rules (pkg/kubelet/kubelet_server_journal.go), kept
 * as data in one place, plus nodetruth's own bounds.
 */
export const JOURNAL_LIMITS = {
  /** kubelet maxServices */
  maxServices: 4,
  /** kubelet maxServiceLength */
  maxServiceLength: 256,
  /** kubelet maxTailLines */
  maxTailLines: 100_000,
  /** kubelet nodeLogDir: file queries are joined under it */
  nodeLogDir: '/var/log',
  /** kubelet's whole-request timeout */
  deadlineMs: 30_000,
  /** our bound on the bytes of journalctl output read for one (non-follow) request */
  maxBytes: 64 * 1024 * 1024,
  /** our bound on a pattern's length */
  maxPatternLength: 1024,
  /** our bound on the bytes returned from a file under /var/log */
  maxFileBytes: 16 * 1024 * 1024,
  /**
   * our bound on one line of such a file, in characters: a longer line keeps its head and
   * says how much was cut. Every line is redacted and matched in one stretch of the event
   * loop, so one 16 MiB line would hold it for most of a second (containerd splits
   * container log lines at 16 KiB for the same reason).
   */
  maxFileLineChars: 64 * 1024,
  /**
   * our bound on journalctl children running at once for non-follow work across the
   * agent (/v1/logs, /v1/kernel's journal fallback, /v1/oom, triage, pattern checks).
   * Follow streams are bounded by their own limiter (--max-follows). Past the bound a
   * request is refused with 429, as the follow limiter does: it is the client's load,
   * not the journal being down (503 would read as an unreadable source).
   */
  maxChildren: 4,
} as const;

/**
 * kubelet's reServiceNameUnsafeCharacters is `[^a-zA-Z\-_.:0-9@]+`; we accept the
 * same alphabet and additionally refuse a leading `-` or `.` (an option or a
 * dotfile, never a unit), `..`, and a trailing dot.
 */
export const UNIT_NAME = /^[a-zA-Z0-9_:@][a-zA-Z0-9_.:@-]*$/;

/** journalctl -p: a level name or number, or a range FROM..TO */
const PRIORITY_NAMES = ['emerg', 'alert', 'crit', 'err', 'warning', 'notice', 'info', 'debug'] as const;
const LEVEL = `(?:[0-7]|${PRIORITY_NAMES.join('|')})`;
export const PRIORITY = new RegExp(`^${LEVEL}(?:\\.\\.${LEVEL})?$`);
