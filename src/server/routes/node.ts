import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { NodeHealth } from '../../model/node.js';
import { nodeHealth } from '../../sources/node/health.js';
import { withinDeadline } from '../../util/deadline.js';
import type { AppDeps } from '../app.js';
import { query } from '../schemas.js';
import { humanSize } from '../../format.js';

type RuntimeReadiness =
  | { reachable: true; ready: boolean; conditions: { type: string; status: boolean; reason: string; message: string }[] }
  | { reachable: false; ready: false; detail: string };

/** CRI Status within the runtime's deadline: a wedged runtime is an answer here, not a wait. */
async function runtimeReadiness(deps: AppDeps): Promise<RuntimeReadiness> {
  const cri = deps.cri;
  if (!cri) return { reachable: false, ready: false, detail: 'no CRI socket configured or found' };
  const o = await withinDeadline(() => cri.status(false), deps.config.criTimeoutMs, 'runtime');
  if (!o.ok) return { reachable: false, ready: false, detail: o.error };
  const ready = o.value.conditions.find((c) => c.type === 'RuntimeReady')?.status ?? false;
  return { reachable: true, ready, conditions: o.value.conditions };
}

function nodeTable(b: NodeHealth & { runtime: RuntimeReadiness }) {
  const rows: (string | number | null)[][] = [
    ['kernel', b.kernelRelease ?? ''],
    ['uptime', b.uptimeSeconds === null ? '' : `${Math.round(b.uptimeSeconds)}s`],
    ['load', b.load ? `${b.load.load1} ${b.load.load5} ${b.load.load15}` : ''],
    ['memory', b.memory.totalBytes === null ? '' : `${humanSize(b.memory.availableBytes ?? 0)} available of ${humanSize(b.memory.totalBytes)}`],
    ['cgroup', `${b.cgroup.version} ${b.cgroup.drivers.join(',')}${b.cgroup.reason ? ` (${b.cgroup.reason})` : ''}`],
    ['pids', `${b.pids.threads ?? '?'} threads, ${b.pids.processes ?? '?'} processes; pid_max ${b.pids.pidMax ?? '?'}, threads-max ${b.pids.threadsMax ?? '?'}`],
    ...(['cpu', 'memory', 'io'] as const).map((k) => {
      const p = b.pressure[k];
      return [`psi ${k}`, p ? `some ${p.some.avg10}/${p.some.avg60}/${p.some.avg300}${p.full ? ` full ${p.full.avg10}/${p.full.avg60}/${p.full.avg300}` : ''}` : 'unavailable'];
    }),
    ...b.disks.map((d) => [
      `disk ${d.path}`,
      d.present ? `${humanSize(d.availableBytes ?? 0)} available of ${humanSize(d.totalBytes ?? 0)}; inodes ${d.inodesFree} free of ${d.inodesTotal}` : 'absent',
    ]),
    ['kubelet', b.kubelet.reachable ? `${b.kubelet.status} ${b.kubelet.body}` : `unreachable: ${b.kubelet.error}`],
    ['runtime', b.runtime.reachable ? (b.runtime.ready ? 'ready' : 'not ready') : `unreachable: ${b.runtime.detail}`],
  ];
  return { columns: ['WHAT', 'VALUE'], rows };
}

export const nodeRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  app.get(
    '/v1/node',
    {
      schema: {
        summary: 'Kernel, uptime, load, memory, PSI, PID use, disk and inode use, cgroup version and driver, kubelet healthz, runtime readiness',
        querystring: query({}),
      },
      config: { table: nodeTable },
    },
    async () => {
      // a part that cannot be read is null and named here; the rest of the answer stands
      const warnings: string[] = [];
      const [health, runtime] = await Promise.all([
        nodeHealth(deps.hostFs, { kubeletHealthzUrl: deps.config.kubeletHealthz, warnings }),
        runtimeReadiness(deps),
      ]);
      return { ...health, runtime, warnings: [...new Set(warnings)] }; // loadavg is read for two parts
    },
  );
};
