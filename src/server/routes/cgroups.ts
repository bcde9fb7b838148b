import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { humanSize, parseDuration, shortId } from '../../format.js';
import { Problem, unavailable, unreadable } from '../../errors.js';
import type { CgroupRecord, Limit } from '../../model/cgroup.js';
import { walkKubepods } from '../../sources/cgroup/cgroups.js';
import { runtimeIndex } from '../../sources/cgroup/names.js';
import { measureThrottling, type ThrottlingEntry } from '../../sources/cgroup/throttling.js';
import { matchCgroupId, readRecords, requireV2, sortRecords } from '../../sources/cgroup/view.js';
import { SingleFlight } from '../../util/concurrency.js';
import type { AppDeps } from '../deps.js';
import { k8sNamespace, podUid, query } from '../schemas.js';

/** A pod UID or a container ID (prefix): lowercase hex with the dashes of a UUID at most. */
const cgroupId = z
  .string()
  .min(1)
  .max(64)
  .regex(
    /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{1,64})$/,
    'expected a pod UID (8-4-4-4-12 lowercase hex) or a container id or id prefix (lowercase hex)',
  );

const windowParam = z
  .string()
  .max(16)
  .default('5s')
  .transform((s, ctx) => {
    const ms = parseDuration(s);
    if (ms === null || ms < 1000 || ms > 30_000) {
      ctx.addIssue({ code: 'custom', message: `window must be a duration from 1s to 30s, such as 5s, got ${JSON.stringify(s)}` });
      return z.NEVER;
    }
    return ms;
  });

/** Names come from the runtime only if it answers quickly; cgroups never wait for a wedged one. */
export const namesDeadline = (deps: AppDeps) => Math.min(deps.config.criTimeoutMs, 1000);

const limitText = (l: Limit | null) => (l === null ? '' : l === 'max' ? 'max' : humanSize(l));
const pct = (x: number | null) => (x === null ? '' : `${(x * 100).toFixed(1)}%`);

export function cgroupsTable(items: CgroupRecord[]) {
  return {
    columns: ['KIND', 'POD UID', 'POD', 'NAMESPACE', 'CONTAINER', 'NAME', 'QOS', 'MEMORY', 'WORKING SET', 'LIMIT', 'CPU QUOTA', 'THROTTLED', 'OOM', 'OOM KILL'],
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
  const fs = deps.hostFs;
  const listFlights = new SingleFlight();

  app.get(
    '/v1/cgroups',
    {
      schema: {
        summary: 'Every pod and container cgroup under kubepods: memory, OOM counters, CPU and throttling, pids, io, PSI',
        description:
          'Limits are a number, or the string "max" (unlimited) exactly as cgroup v2 writes it; null means the file is absent (controller not enabled). 501 on cgroup v1 or hybrid hosts.',
        querystring: query({
          podUid: podUid.optional(),
          namespace: k8sNamespace.optional().describe('needs the runtime (pod namespaces are not in cgroup names)'),
          kind: z.enum(['pod', 'container']).optional(),
          sort: z.enum(['memory', 'throttling', 'oom']).optional(),
        }),
      },
      config: { table: (b: { items: CgroupRecord[] }) => cgroupsTable(b.items) },
    },
    async (req) => {
      const { format: _format, ...q } = req.query;
      // concurrent identical requests share one walk and read (DESIGN.md); nothing is kept after
      return listFlights.do(JSON.stringify(q), async () => {
        const mode = await requireV2(fs);
        // a cgroup that cannot be listed or read is skipped and named here; the rest stands
        const warnings: string[] = [];
        const [found, join] = await Promise.all([
          walkKubepods(fs, q.podUid === undefined ? { warnings } : { podUid: q.podUid, warnings }),
          runtimeIndex(deps.cri, namesDeadline(deps)),
        ]);
        if (q.namespace !== undefined && !join.joined) throw unavailable(`namespace filter needs the runtime: ${join.detail}`);
        let items = await readRecords(fs, q.kind ? found.filter((c) => c.kind === q.kind) : found, join.index, undefined, warnings);
        if (q.namespace !== undefined) items = items.filter((r) => r.podNamespace === q.namespace);
        return {
          cgroupVersion: mode.version,
          drivers: mode.drivers,
          runtime: join.joined ? { joined: true } : { joined: false, detail: join.detail },
          items: sortRecords(items, q.sort),
          warnings,
        };
      });
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
      await requireV2(fs);
      const warnings: string[] = [];
      const [all, join] = await Promise.all([walkKubepods(fs, { warnings }), runtimeIndex(deps.cri, namesDeadline(deps))]);
      const m = matchCgroupId(all, req.params.id, join);
      const items = await readRecords(fs, m.cgroups, join.index, undefined, warnings);
      if (items[0]?.path !== m.cgroups[0]!.path) {
        // THE cgroup asked for: unreadable is an answer of its own (with the reason), not a 404 nor a 500
        const own = warnings.find((w) => w.startsWith(`cgroup ${m.cgroups[0]!.path}:`));
        if (own) throw unreadable(`cannot read the cgroup of ${req.params.id}: ${own}`);
        throw new Problem(404, 'Not found', `the cgroup of ${req.params.id} vanished while it was read`);
      }
      return { match: m.match, runtime: join.joined ? { joined: true } : { joined: false, detail: join.detail }, items, warnings };
    },
  );

  app.get(
    '/v1/throttling',
    {
      schema: {
        summary: "Containers ranked by CPU throttling measured over a window: cpu.stat read twice, share of CFS periods throttled, seconds throttled, cpu.max quota in cores",
        querystring: query({ window: windowParam, podUid: podUid.optional() }),
      },
      config: { table: throttlingTable },
    },
    async (req, reply) => {
      await requireV2(fs);
      // The response closing before it was written means the client went away: stop waiting.
      const gone = new AbortController();
      const onClose = () => {
        if (!reply.raw.writableFinished) gone.abort();
      };
      reply.raw.once('close', onClose);
      try {
        const signal = AbortSignal.any([gone.signal, deps.shutdown]);
        const warnings: string[] = [];
        const [report, join] = await Promise.all([
          measureThrottling(fs, req.query.window, { ...(req.query.podUid ? { podUid: req.query.podUid } : {}), signal, warnings }),
          runtimeIndex(deps.cri, namesDeadline(deps)),
        ]);
        const items = report.entries.map((e): NamedThrottling => {
          const c = join.index?.containers.get(e.containerId!);
          const s = join.index?.podsByUid.get(e.podUid);
          return { ...e, podName: s?.name ?? null, podNamespace: s?.namespace ?? null, containerName: c?.name ?? null };
        });
        return { windowMs: report.windowMs, runtime: join.joined ? { joined: true } : { joined: false, detail: join.detail }, items, warnings };
      } catch (err) {
        if ((err as Error).name === 'AbortError') throw unavailable('measurement cancelled: the client went away or the agent is shutting down');
        throw err;
      } finally {
        reply.raw.off('close', onClose);
      }
    },
  );
};
