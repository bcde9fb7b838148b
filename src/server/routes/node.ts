import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { NodeHealth } from '../../model/node.js';
import { nodeHealth } from '../../sources/node/health.js';
import type { AppDeps } from '../deps.js';
import { query } from '../schemas.js';
import { humanSize } from '../../format.js';

const RUNTIME_DEADLINE_MS = 1000;

type RuntimeReadiness =
  | { reachable: true; ready: boolean; conditions: { type: string; status: boolean; reason: string; message: string }[] }
  | { reachable: false; ready: false; detail: string };

async function runtimeReadiness(deps: AppDeps): Promise<RuntimeReadiness> {
  if (!deps.cri) return { reachable: false, ready: false, detail: 'no CRI socket configured or found' };
  const status = deps.cri.status(false);
  status.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const deadline = Math.min(deps.config.criTimeoutMs, RUNTIME_DEADLINE_MS);
  try {
    const s = await Promise.race([
      status,
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), deadline);
      }),
    ]);
    if (!s) return { reachable: false, ready: false, detail: `runtime did not answer within ${deadline} ms` };
    const ready = s.conditions.find((c) => c.type === 'RuntimeReady')?.status ?? false;
    return { reachable: true, ready, conditions: s.conditions };
  } catch (err) {
    return { reachable: false, ready: false, detail: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
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
