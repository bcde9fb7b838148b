import type { MemoryEvents, QosClass } from '../../model/cgroup.js';
import { type FoundCgroup, walkKubepods } from '../cgroup/cgroups.js';
import { parseMemoryEvents } from '../cgroup/parse.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { mapLimit } from '../../lib/concurrency.js';

export interface CgroupMemoryEvents {
  path: string;
  podUid: string;
  containerId: string | null;
  qos: QosClass;
  events: MemoryEvents;
}

/** cgroups whose memory.events are read at once (each is one small file through libuv's pool) */
const CONCURRENCY = 16;

/**
 * memory.events of the given cgroups. One that cannot be read (a symlink loop in
 * place of the file: ELOOP; a directory in its place: EISDIR; EACCES; a cgroup that
 * vanished between the walk and the read) is skipped and named in `warnings`; the
 * rest of the list stands.
 */
export async function readMemoryEvents(fs: HostFs, found: readonly FoundCgroup[], warnings: string[]): Promise<CgroupMemoryEvents[]> {
  const out = await mapLimit(found, CONCURRENCY, async (cg) => {
    let text: string | null;
    try {
      text = await fs.readIn(cg.dir, 'memory.events', 64 * 1024);
    } catch (err) {
      warnings.push(`memory.events of ${cg.path}: unreadable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}), skipped`);
      return null;
    }
    if (text === null) {
      // no memory controller in this cgroup, or the cgroup itself is gone (a container that just exited)
      if (!(await stillThere(fs, cg))) warnings.push(`memory.events of ${cg.path}: the cgroup vanished while it was read, skipped`);
      return null;
    }
    const events = parseMemoryEvents(text);
    if (!events) {
      warnings.push(`memory.events of ${cg.path}: not in the kernel's format, skipped`);
      return null;
    }
    return { path: cg.path, podUid: cg.podUid, containerId: cg.containerId, qos: cg.qos, events };
  });
  return out.filter((x) => x !== null);
}

/** cpu.stat and cgroup.controllers are in every v2 cgroup: both absent means the directory is gone. */
async function stillThere(fs: HostFs, cg: FoundCgroup): Promise<boolean> {
  for (const f of ['cgroup.controllers', 'cpu.stat']) {
    try {
      if ((await fs.readIn(cg.dir, f, 4096)) !== null) return true;
    } catch {
      return true; // there, but unreadable: not vanished
    }
  }
  return false;
}

/** memory.events of every pod and container cgroup under kubepods (the cgroup source's walk). */
export async function readMemoryEventsOfKubepods(fs: HostFs, warnings: string[] = []): Promise<CgroupMemoryEvents[]> {
  return readMemoryEvents(fs, await walkKubepods(fs, { warnings }), warnings);
}
