/**
 * The one clock of a timeline: the kernel stamps its records with µs since boot; the wall
 * clock at boot turns them into times. The boot time is the host's own `btime` from
 * /proc/stat under the host root (the kernel's wall clock minus its uptime, in whole
 * seconds), so a capture's or a fixture's host root converts with its own boot; without it,
 * the agent's own clocks (it shares the host's kernel: same monotonic clock).
 */
import type { TimelineClock } from '../../model/timeline.js';
import type { HostFs } from '../../readers/hostfs/hostfs.js';
import type { JournalSource } from '../../readers/journal/journalctl.js';
import { journalQuery } from '../../readers/journal/query.js';
import { formatMicros, parseRfc3339Micros } from '../../readers/journal/time.js';
import { bootWallUs } from '../../readers/kmsg/reader.js';

/** /proc/stat is small (a line per CPU); more than this is not /proc/stat. */
const STAT_BYTES = 256 * 1024;

/** btime's seconds from /proc/stat's text, or null. */
export function parseBtime(stat: string): number | null {
  const m = /^btime (\d{1,12})$/m.exec(stat);
  const s = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(s) && s > 0 ? s : null;
}

interface KernelClock {
  bootUs: number;
  clock: TimelineClock;
}

export async function kernelClock(hostFs: HostFs, agentBootUs: () => number = bootWallUs): Promise<KernelClock> {
  let btime: number | null = null;
  let why = '';
  try {
    const stat = await hostFs.readFile('/proc/stat', STAT_BYTES);
    btime = stat === null ? null : parseBtime(stat);
    if (btime === null) why = stat === null ? 'no /proc/stat under the host root' : 'no btime line in /proc/stat';
  } catch (err) {
    why = `/proc/stat: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
  if (btime !== null) {
    const bootUs = btime * 1_000_000;
    return { bootUs, clock: { kernel: 'btime', bootTime: formatMicros(bootUs), detail: 'kernel records: µs since boot + btime from the host\'s /proc/stat (whole seconds)' } };
  }
  const bootUs = agentBootUs();
  return { bootUs, clock: { kernel: 'agent', bootTime: formatMicros(bootUs), detail: `kernel records: µs since boot + the agent's wall clock minus its monotonic clock (${why})` } };
}

/** Kernel records of this boot the journal is asked for: its newest, a few (one journalctl child, indexed matches). */
const CLOCK_RECORDS = 20;
/** More than this between the two boot times is not btime's rounding nor journald's delay. */
const CLOCK_TOLERANCE_US = 1_000_000;

/**
 * The journal's pairing of kernel and wall-clock stamps for the current boot, compared with
 * the boot time the timeline uses. Nothing when the journal holds no kernel record of this
 * boot (or there is no boot id); a warning when they differ by more than a second.
 */
export async function journalClock(hostFs: HostFs, journal: JournalSource, bootUs: number, signal: AbortSignal): Promise<{ journal?: TimelineClock['journal']; warning?: string }> {
  const id = (await hostFs.readFile('/proc/sys/kernel/random/boot_id', 64).catch(() => null))?.trim().replace(/-/g, '');
  if (!id || !/^[0-9a-f]{32}$/.test(id)) return {};
  const r = await journal.query(journalQuery({ matches: ['_TRANSPORT=kernel', `_BOOT_ID=${id}`], tailLines: CLOCK_RECORDS }), signal);
  let best = Infinity;
  let n = 0;
  for (const rec of r.records) {
    const wall = parseRfc3339Micros(rec.time);
    if (wall === null || rec.monotonicUs === null || rec.bootId !== id) continue;
    n++;
    best = Math.min(best, wall - rec.monotonicUs);
  }
  if (n === 0) return {};
  const differenceMs = Math.round((best - bootUs) / 1000);
  const paired = { bootTime: formatMicros(best), differenceMs, records: n };
  // btime is whole seconds, rounded down: the journal's boot is up to a second later, never earlier
  if (best - bootUs > CLOCK_TOLERANCE_US || best < bootUs - CLOCK_TOLERANCE_US) {
    return {
      journal: paired,
      warning: `the journal's kernel records of this boot put it at ${formatMicros(best)}, ${(differenceMs / 1000).toFixed(1)} s from the boot time used (${formatMicros(bootUs)}): the kernel's clock stood still (a suspend) or the wall clock stepped since boot, so kernel times may be off by that much`,
    };
  }
  return { journal: paired };
}
