/**
 * /proc/sys/kernel/tainted decoded. The letters and meanings are our own table, after
 * the kernel's taint flag list (Documentation/admin-guide/tainted-kernels.rst and
 * kernel/panic.c, Linux 6.x): bit n set prints the letter at position n of an oops's
 * "Tainted:" string. Bits the table does not know (a newer kernel) are kept as '?'.
 */
import type { KernelTaint, TaintFlag } from '../../model/node.js';

interface TaintBit {
  bit: number;
  letter: string;
  meaning: string;
  /** what it says about the node's health: a past oops, a lockup, a machine check, a bad page, a warning */
  trouble: boolean;
}

export const TAINT_BITS: readonly TaintBit[] = [
  { bit: 0, letter: 'P', meaning: 'a proprietary module was loaded', trouble: false },
  { bit: 1, letter: 'F', meaning: 'a module was force-loaded', trouble: false },
  { bit: 2, letter: 'S', meaning: 'the kernel runs on an out-of-specification system (SMP unsafe, forced CPU feature)', trouble: false },
  { bit: 3, letter: 'R', meaning: 'a module was force-unloaded', trouble: false },
  { bit: 4, letter: 'M', meaning: 'a processor reported a machine check exception (hardware error)', trouble: true },
  { bit: 5, letter: 'B', meaning: 'a bad page was referenced or some unexpected page flags were seen (memory corruption)', trouble: true },
  { bit: 6, letter: 'U', meaning: 'userspace asked for a taint', trouble: false },
  { bit: 7, letter: 'D', meaning: 'the kernel died recently (an oops or BUG)', trouble: true },
  { bit: 8, letter: 'A', meaning: 'an ACPI table was overridden', trouble: false },
  { bit: 9, letter: 'W', meaning: 'the kernel issued a warning (WARN_ON)', trouble: true },
  { bit: 10, letter: 'C', meaning: 'a staging driver was loaded', trouble: false },
  { bit: 11, letter: 'I', meaning: 'a workaround for a platform firmware bug is in use', trouble: false },
  { bit: 12, letter: 'O', meaning: 'an externally built (out-of-tree) module was loaded', trouble: false },
  { bit: 13, letter: 'E', meaning: 'an unsigned module was loaded on a kernel that supports module signatures', trouble: false },
  { bit: 14, letter: 'L', meaning: 'a soft lockup occurred', trouble: true },
  { bit: 15, letter: 'K', meaning: 'the kernel was live-patched', trouble: false },
  { bit: 16, letter: 'X', meaning: 'an auxiliary taint (defined by distributions)', trouble: false },
  { bit: 17, letter: 'T', meaning: 'the kernel was built with the struct randomization plugin', trouble: false },
  { bit: 18, letter: 'N', meaning: 'an in-kernel test was run', trouble: false },
  { bit: 19, letter: 'J', meaning: 'userspace used a mutating debug operation of fwctl', trouble: false },
];

const BY_BIT = new Map(TAINT_BITS.map((b) => [b.bit, b]));

/** The decimal text the kernel writes (an unsigned long); null when it is not that. */
export function parseTaint(text: string | null): KernelTaint | null {
  if (text === null) return null;
  const t = text.trim();
  if (!/^\d{1,20}$/.test(t)) return null;
  const v = BigInt(t);
  const flags: TaintFlag[] = [];
  for (let bit = 0; bit < 64; bit++) {
    if (((v >> BigInt(bit)) & 1n) === 0n) continue;
    const known = BY_BIT.get(bit);
    flags.push(known ? { bit, letter: known.letter, meaning: known.meaning } : { bit, letter: '?', meaning: `bit ${bit} (not in this agent's table: a newer kernel)` });
  }
  // a JSON number is exact up to 2^53; the kernel uses fewer than 20 bits
  return { value: Number(v), flags, letters: flags.map((f) => f.letter).join('') };
}

/** The set flags that say something went wrong (not merely how the kernel was built or loaded). */
export const troubleFlags = (t: KernelTaint): TaintFlag[] => t.flags.filter((f) => BY_BIT.get(f.bit)?.trouble === true);
