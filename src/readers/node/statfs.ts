/**
 * statfs through the agent's one guard for it (lib/guard.ts; libuv's pool is per process).
 * A statfs of a hung mount (a dead NFS server, a FUSE daemon that stopped answering) never
 * returns: the pool thread running it waits in the kernel for good, and so does the
 * resolve (lstat) before it. So at most two at once (the /proc guard may hold two of the
 * four threads), each waited for at most a second, and a path whose call is still out is
 * not asked again until it returns; the mount itself is reported (GET /v1/node
 * `facts.mounts`, triage `mount-not-answering`).
 */
import type { StatsFs } from 'node:fs';
import type { MountAnswer } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { Guard, type Guarded } from '../../lib/guard.js';

const STATFS_LIMITS = {
  maxCalls: 2,
  timeoutMs: 1000,
} as const;

export const statfsGuard = (max: number = STATFS_LIMITS.maxCalls, timeoutMs: number = STATFS_LIMITS.timeoutMs) =>
  new Guard({ what: 'statfs', hangsWhen: 'a hung mount, or a node too busy to answer in time', whileStuck: 'disks on those mounts are reported as not read', max, timeoutMs });

/** The agent's one statfs guard. */
export const statfsCalls = statfsGuard();

/** statfs(hostPath) within the deadline; null when the path is not there. */
export function statfs(fs: HostFs, hostPath: string, guard: Guard = statfsCalls): Promise<Guarded<StatsFs | null>> {
  return guard.run(() => fs.statfs(hostPath), { key: hostPath });
}

/** The last answer for each path asked, in the order first asked (facts.mounts). */
export function mountAnswers(guard: Guard = statfsCalls): MountAnswer[] {
  return guard
    .answers()
    .map((a) => (a.ok ? { path: a.key, answered: true, ms: a.ms } : { path: a.key, answered: false, reason: a.error, since: new Date(a.since).toISOString(), outstanding: a.outstanding }));
}
