/**
 * The one clock of a timeline: the kernel stamps its records with µs since boot; the wall
 * clock at boot turns them into times. The boot time is the host's own `btime` from
 * /proc/stat under the host root (the kernel's wall clock minus its uptime, in whole
 * seconds), so a capture's or a fixture's host root converts with its own boot; without it,
 * the agent's own clocks (it shares the host's kernel: same monotonic clock).
 */
import type { TimelineClock } from '../../model/timeline.js';
import type { HostFs } from '../../readers/hostfs/hostfs.js';
import { formatMicros } from '../../readers/journal/time.js';
import { bootWallUs } from '../../readers/kmsg/reader.js';

/** /proc/stat is small (a line per CPU); more than this is not /proc/stat. */
const STAT_BYTES = 256 * 1024;

/** btime's seconds from /proc/stat's text, or null. */
export function parseBtime(stat: string): number | null {
  const m = /^btime (\d{1,12})$/m.exec(stat);
  const s = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(s) && s > 0 ? s : null;
}

export interface KernelClock {
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
