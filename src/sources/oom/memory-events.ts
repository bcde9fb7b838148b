import type { MemoryEvents } from '../../model/cgroup.js';
import { walkKubepods } from '../cgroup/cgroups.js';
import type { QosClass } from '../cgroup/kubepods-path.js';
import { parseMemoryEvents } from '../cgroup/parse.js';
import type { HostFs } from '../hostfs/hostfs.js';

/** memory.events of every pod and container cgroup under kubepods (the cgroup source's walk). */
export async function readMemoryEventsOfKubepods(
  fs: HostFs,
): Promise<Array<{ path: string; podUid: string; containerId: string | null; qos: QosClass; events: MemoryEvents }>> {
  const found = await walkKubepods(fs);
  const out = await Promise.all(
    found.map(async (cg) => {
      const events = parseMemoryEvents(await fs.readIn(cg.dir, 'memory.events'));
      return events ? { path: cg.path, podUid: cg.podUid, containerId: cg.containerId, qos: cg.qos, events } : null;
    }),
  );
  return out.filter((x) => x !== null);
}
