/**
 * The kernel's taint (/proc/sys/kernel/tainted): the number, and one series per set flag so
 * an alert can tell a soft lockup (L) or a warning (W) from an out-of-tree module (O). Bits
 * are at most 64: the flag series are bounded.
 */
import { Gauge } from 'prom-client';
import type { Collector } from '../registry.js';
import { scalarText } from './scalar.js';

export const taintCollector: Collector = {
  name: 'taint',
  inputs: ['facts'],
  register({ registry, scrape }) {
    new Gauge({
      name: 'nodetruth_kernel_taint_flag',
      help: 'Each taint flag set in /proc/sys/kernel/tainted, by bit and the letter an oops prints after "Tainted:" (? for a bit this agent does not know); 1 while set.',
      labelNames: ['bit', 'letter'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const f of (await scrape().facts())?.taint?.flags ?? []) this.set({ bit: String(f.bit), letter: f.letter }, 1);
      },
    });
    // no taint file (or not a number): no sample, not "untainted"
    return async (s) =>
      scalarText([
        {
          name: 'nodetruth_kernel_tainted',
          help: 'The kernel taint value of /proc/sys/kernel/tainted (0: not tainted; each bit is a flag, see nodetruth_kernel_taint_flag).',
          value: (await s.facts())?.taint?.value,
        },
      ]);
  },
};
