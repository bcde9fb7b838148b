import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { NodeFacts, NodeHealth } from '../../model/node.js';
import { nodeFacts } from '../../readers/node/facts.js';
import { nodeHealth } from '../../view/node-health.js';
import { withinDeadline } from '../../lib/deadline.js';
import { deadlines } from '../../deadlines.js';
import type { AppDeps } from '../app.js';
import { query } from '../schemas.js';
import { humanSize } from '../../format.js';
import { nodeOsRows } from '../../view/node-text.js';

type RuntimeReadiness =
  | { reachable: true; ready: boolean; conditions: { type: string; status: boolean; reason: string; message: string }[] }
  | { reachable: false; ready: false; detail: string };

/** CRI Status within the table's deadline: a wedged runtime is an answer here, not a wait. */
async function runtimeReadiness(deps: AppDeps): Promise<RuntimeReadiness> {
  const cri = deps.cri;
  if (!cri) return { reachable: false, ready: false, detail: 'no CRI socket configured or found' };
  const o = await withinDeadline(() => cri.status(false), deadlines(deps.config).runtimeStatus, 'runtime');
  if (!o.ok) return { reachable: false, ready: false, detail: o.error };
  const ready = o.value.conditions.find((c) => c.type === 'RuntimeReady')?.status ?? false;
  return { reachable: true, ready, conditions: o.value.conditions };
}

function nodeTable(b: NodeHealth & { runtime: RuntimeReadiness; facts: NodeFacts }) {
  const f = b.facts;
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
      d.present ? `${humanSize(d.availableBytes ?? 0)} available of ${humanSize(d.totalBytes ?? 0)}; inodes ${d.inodesFree} free of ${d.inodesTotal}` : d.present === null ? `not read: ${d.notRead}` : 'absent',
    ]),
    ['kubelet', b.kubelet.reachable ? `${b.kubelet.status} ${b.kubelet.body}` : `unreachable: ${b.kubelet.error}`],
    ['runtime', b.runtime.reachable ? (b.runtime.ready ? 'ready' : 'not ready') : `unreachable: ${b.runtime.detail}`],
    ['conntrack', f.conntrack.loaded ? `${f.conntrack.entries} of ${f.conntrack.limit} entries${f.conntrack.hostNetwork === false ? ' (the agent\'s own network namespace)' : ''}` : f.conntrack.reason],
    ['taint', f.taint ? `${f.taint.value}${f.taint.letters ? ` ${f.taint.letters}` : ''}` : 'unknown'],
    ['processes', `${f.processes.dState} in D state, ${f.processes.zState} zombies of ${f.processes.scanned}${f.processes.cut ? ` (${f.processes.cut})` : ''}`],
    ...f.certificates.map((c) => [`cert ${c.role}`, c.notAfter ? `${c.path} expires ${c.notAfter}${c.secondsLeft !== null && c.secondsLeft < 0 ? ' (EXPIRED)' : ''}` : `${c.path}: ${c.error}`]),
    ['eviction', `${f.eviction.configPath ?? 'no config file'}: ${f.eviction.thresholds.map((t) => `${t.signal}<${t.value}${t.kind === 'soft' ? ' (soft)' : ''}`).join(', ') || 'none'}`],
    ...f.mounts.filter((m) => !m.answered).map((m) => [`mount ${m.path}`, m.answered ? '' : m.reason]),
    ...f.criLatency.methods.map((m) => [`cri ${m.method}`, m.calls ? `last ${m.lastSeconds}s (${m.lastCode}), max ${m.maxSeconds}s over ${m.calls} calls` : 'no calls yet']),
    ...nodeOsRows(f),
  ];
  return { columns: ['WHAT', 'VALUE'], rows };
}

export const nodeRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  app.get(
    '/v1/node',
    {
      schema: {
        summary:
          'Kernel, uptime, load, memory, PSI, PID use, disk and inode use, cgroup version and driver, kubelet healthz, runtime readiness; facts: conntrack, taint, D/Z processes by pod, kubelet certificates, eviction thresholds in force, mounts that do not answer, CRI list latency',
        querystring: query({}),
      },
      config: { table: nodeTable },
    },
    async () => {
      // a part that cannot be read is null and named here; the rest of the answer stands
      const warnings: string[] = [];
      const healthP = nodeHealth(deps.hostFs, { kubeletHealthzUrl: deps.config.kubeletHealthz, kubeletTimeoutMs: deadlines(deps.config).kubeletHealthz, warnings });
      const [health, runtime, facts] = await Promise.all([
        healthP,
        runtimeReadiness(deps),
        // the disks of health feed the eviction checks: one statfs per path per answer
        nodeFacts(deps.hostFs, { cri: deps.cri, disks: healthP.then((h) => h.disks), warnings }),
      ]);
      // the data roots the node names (kubelet --root-dir, containerd's root) beside the fixed disks
      const disks = facts.dataDisks ? [...health.disks, ...facts.dataDisks] : health.disks;
      return { ...health, disks, runtime, facts, warnings: [...new Set(warnings)] }; // loadavg is read for two parts
    },
  );
};
