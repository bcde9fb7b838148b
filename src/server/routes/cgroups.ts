import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { humanSize, shortId } from '../../format.js';
import { Problem } from '../../errors.js';
import type { CgroupRecord, Limit } from '../../model/cgroup.js';
import { type ThrottlingEntry } from '../../readers/cgroup/throttling.js';
import { sortRecords } from '../../view/cgroup-lookup.js';
import { joinSummary } from '../../view/runtime-index.js';
import type { AppDeps } from '../app.js';
import { k8sNamespace, podUid, query, throttlingWindow } from '../schemas.js';

/** A pod UID or a container ID (prefix): lowercase hex with the dashes of a UUID at most. */
const cgroupId = z
  .string()
  .min(1)
  .max(64)
  .regex(
    /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{1,64})$/,
    'expected a pod UID (8-4-4-4-12 lowercase hex) or a container id or id prefix (lowercase hex)',
  );

const limitText = (l: Limit | null) => (l === null ? '' : l === 'max' ? 'max' : humanSize(l));
const pct = (x: number | null) => (x === null ? '' : `${(x * 100).toFixed(1)}%`);

function cgroupsTable(items: CgroupRecord[]) {
  return {
    columns: ['KIND', 'POD UID', 'POD', 'NAMESPACE', 'CONTAINER', 'NAME', 'QOS', 'MEMORY', 'WORKING SET', 'LIMIT', 'HIGH', 'CPU QUOTA', 'THROTTLED', 'OOM', 'OOM KILL'],
    rows: items.map((r) => [
      r.kind,
      r.podUid,
      r.podName,
      r.podNamespace,
      shortId(r.containerId),
      r.containerName ?? (r.sandbox ? '(sandbox)' : ''),
      r.qos,
      r.memory.current === null ? '' : humanSize(r.memory.current),
      r.memory.workingSet === null ? '' : humanSize(r.memory.workingSet),
      limitText(r.memory.max),
      limitText(r.memory.high),
      r.cpu.max ? String(r.cpu.max.quotaCores) : '',
      r.cpu.nrPeriods ? pct((r.cpu.nrThrottled ?? 0) / r.cpu.nrPeriods) : '',
      r.memory.events?.oom ?? '',
      r.memory.events?.oomKill ?? '',
    ]),
  };
}

type NamedThrottling = ThrottlingEntry & { podName: string | null; podNamespace: string | null; containerName: string | null };

function throttlingTable(b: { items: NamedThrottling[] }) {
  return {
    columns: ['CONTAINER', 'POD UID', 'POD', 'NAME', 'QOS', 'QUOTA', 'USAGE', 'PERIODS', 'THROTTLED', 'SHARE', 'THROTTLED SECONDS'],
    rows: b.items.map((e) => [
      shortId(e.containerId),
      e.podUid,
      e.podName,
      e.containerName,
      e.qos,
      e.cpuMax ? String(e.cpuMax.quotaCores) : '',
      e.usageCores,
      e.periods,
      e.throttledPeriods,
      pct(e.throttledShare),
      e.throttledSeconds,
    ]),
  };
}

export const cgroupRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const cgroups = deps.cgroups;

  app.get(
    '/v1/cgroups',
    {
      schema: {
        summary: 'Every pod and container cgroup under kubepods: memory, OOM counters, CPU and throttling, pids, io, PSI',
        description:
          'Limits are a number, or the string "max" (unlimited) exactly as cgroup v2 writes it; null means the file is absent (controller not enabled). 501 on cgroup v1 or hybrid hosts.',
        querystring: query({
          podUid: podUid.optional().describe("one pod's cgroup and its containers'"),
          namespace: k8sNamespace.optional().describe('needs the runtime (pod namespaces are not in cgroup names), else 503 needs_runtime'),
          kind: z.enum(['pod', 'container']).optional(),
          sort: z.enum(['memory', 'throttling', 'oom']).optional().describe('largest first'),
        }),
      },
      config: { table: (b: { items: CgroupRecord[] }) => cgroupsTable(b.items) },
    },
    async (req) => {
      const q = req.query;
      // concurrent requests (of any filter) share one walk, read and runtime join (view/named-cgroups.ts);
      // a cgroup that cannot be listed or read is skipped and named in warnings, the rest stands
      const { mode, join, items: all, warnings } = await cgroups.records(q.podUid === undefined ? {} : { podUid: q.podUid });
      if (q.namespace !== undefined && !join.joined) throw new Problem('needs_runtime', `namespace filter needs the runtime: ${join.detail}`, { param: 'namespace' });
      const items = all.filter((r) => (!q.kind || r.kind === q.kind) && (q.namespace === undefined || r.podNamespace === q.namespace));
      return { cgroupVersion: mode.version, drivers: mode.drivers, runtime: joinSummary(join), items: sortRecords(items, q.sort), warnings };
    },
  );

  app.get(
    '/v1/cgroups/:id',
    {
      schema: {
        summary: 'One pod (by UID: its cgroup, then its containers) or container (by ID or unique prefix: its cgroup, then its pod)',
        params: z.strictObject({ id: cgroupId }),
        querystring: query({}),
      },
      config: { table: (b: { items: CgroupRecord[] }) => cgroupsTable(b.items) },
    },
    async (req) => {
      const m = await cgroups.match(req.params.id);
      const { join, warnings } = m;
      const items = await cgroups.read(m.cgroups, join.names, warnings);
      if (items[0]?.path !== m.cgroups[0]!.path) {
        // THE cgroup asked for: unreadable is an answer of its own (with the reason), not a 404 nor a 500
        const own = warnings.find((w) => w.startsWith(`cgroup ${m.cgroups[0]!.path}:`));
        if (own) throw new Problem('source_unreadable', `cannot read the cgroup of ${req.params.id}: ${own}`);
        throw new Problem('not_found', `the cgroup of ${req.params.id} vanished while it was read`);
      }
      return { match: m.match, runtime: joinSummary(join), items, warnings };
    },
  );

  app.get(
    '/v1/throttling',
    {
      schema: {
        summary: "Containers ranked by CPU throttling measured over a window: cpu.stat read twice, share of CFS periods throttled, seconds throttled, cpu.max quota in cores",
        querystring: query({ window: throttlingWindow, podUid: podUid.optional().describe('one pod') }),
      },
      config: { table: throttlingTable },
    },
    async (req, reply) => {
      // The response closing before it was written means the client went away: stop waiting.
      const gone = new AbortController();
      const onClose = () => {
        if (!reply.raw.writableFinished) gone.abort();
      };
      reply.raw.once('close', onClose);
      try {
        const signal = AbortSignal.any([gone.signal, deps.shutdown]);
        const { report, join, warnings } = await cgroups.throttling(req.query.window, { ...(req.query.podUid ? { podUid: req.query.podUid } : {}), signal });
        const items = report.entries.map((e): NamedThrottling => {
          const n = join.names.of(e);
          return { ...e, podName: n.podName, podNamespace: n.podNamespace, containerName: n.containerName };
        });
        return { windowMs: report.windowMs, runtime: joinSummary(join), items, warnings };
      } catch (err) {
        if ((err as Error).name === 'AbortError') throw new Problem('shutting_down', 'measurement cancelled: the client went away or the agent is shutting down');
        throw err;
      } finally {
        reply.raw.off('close', onClose);
      }
    },
  );
};
