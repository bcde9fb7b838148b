/**
 * Connection tracking use: entries against the table's limit. When the table is
 * full the kernel drops new connections silently ("nf_conntrack: table full,
 * dropping packet" in kmsg). /proc/sys/net is per network namespace: the count is
 * that of the namespace the agent runs in (hostNetwork: the host's), the limit is
 * global. Both files are absent while the nf_conntrack module is not loaded.
 */
import { readlink } from 'node:fs/promises';
import type { Conntrack } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';

export const CONNTRACK_COUNT = '/proc/sys/net/netfilter/nf_conntrack_count';
export const CONNTRACK_MAX = '/proc/sys/net/netfilter/nf_conntrack_max';

const num = (t: string | null) => (t !== null && /^\s*\d{1,15}\s*$/.test(t) ? Number(t) : null);

/** The agent's own net namespace against host PID 1's: whether the count is the host's. */
async function sharesHostNetwork(fs: HostFs): Promise<boolean | null> {
  try {
    // the agent's own /proc, as HostFs itself reads /proc/self/fd: the kernel's name, nothing of the host's
    const [mine, host] = await Promise.all([readlink('/proc/self/ns/net'), fs.readlink('/proc/1/ns/net')]);
    return host === null ? null : mine === host;
  } catch {
    return null;
  }
}

export async function readConntrack(fs: HostFs): Promise<Conntrack> {
  const [count, max] = await Promise.all([fs.readFile(CONNTRACK_COUNT, 64), fs.readFile(CONNTRACK_MAX, 64)]);
  if (count === null && max === null) return { loaded: false, reason: `${CONNTRACK_COUNT} is absent: the nf_conntrack module is not loaded (no connection tracking, no table to fill)` };
  const entries = num(count);
  const limit = num(max);
  if (entries === null || limit === null) return { loaded: false, reason: `${count === null ? CONNTRACK_COUNT : CONNTRACK_MAX} ${count === null || max === null ? 'is absent' : 'is not a number'}` };
  return { loaded: true, entries, limit, ratio: limit > 0 ? Math.round((entries / limit) * 1e6) / 1e6 : null, hostNetwork: await sharesHostNetwork(fs) };
}
