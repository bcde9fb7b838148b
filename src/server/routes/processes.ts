import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { NamespaceEntry, ProcessInfo } from '../../model/process.js';
import { containerNamespaces, containerProcesses } from '../../view/container-processes.js';
import type { AppDeps } from '../app.js';
import { requestSignal } from '../request-signal.js';
import { idParams, query } from '../schemas.js';
import { humanSize } from '../../format.js';
import { redactCmdlines } from '../../redact.js';

/** Processes and namespaces of a container, through its cgroup: works with the runtime down. */
export const processRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const fs = deps.hostFs;

  /** The container cgroup for an id or unique prefix (pods are not candidates here). */
  async function containerCgroup(id: string, withNames: boolean) {
    const m = await deps.cgroups.match(id, { names: withNames, containersOnly: true });
    return { all: m.found, target: m.cgroups[0]!, join: m.join };
  }

  app.get(
    '/v1/containers/:id/processes',
    {
      schema: {
        summary: "Processes in the container's cgroup (cgroup.procs): pid, ppid, comm, cmdline, state, rss, threads",
        params: idParams,
        querystring: query({}),
      },
      config: {
        table: (b: { items: ProcessInfo[] }) => ({
          columns: ['PID', 'PPID', 'STATE', 'RSS', 'THREADS', 'COMM', 'CMDLINE'],
          rows: b.items.map((p) => [p.pid, p.ppid, p.state, p.rssBytes === null ? '' : humanSize(p.rssBytes), p.threads, p.comm, p.cmdline.join(' ')]),
        }),
      },
    },
    async (req) => {
      const { target } = await containerCgroup(req.params.id, false);
      // cmdline reads can block on the target's memory map: bounded per request, see readers/proc/limiter.ts
      const { items, warnings } = await containerProcesses(fs, target, requestSignal(req));
      // command lines carry credentials (--password=x, --token x): redacted here, where they leave
      return { containerId: target.containerId, podUid: target.podUid, cgroup: target.path, items: redactCmdlines(items), warnings };
    },
  );

  app.get(
    '/v1/containers/:id/namespaces',
    {
      schema: {
        summary: "Namespaces of the container's main process (/proc/<pid>/ns/*), each marked shared with the host (PID 1), with the pod sandbox's process, or private",
        description:
          "The sandbox is the pod's sandbox (pause) container: from the runtime when it answers (source runtime), else the container cgroup of the same pod whose main process started first (source earliest-process).",
        params: idParams,
        querystring: query({}),
      },
      config: {
        table: (b: { items: NamespaceEntry[] }) => ({
          columns: ['TYPE', 'INODE', 'SHARED WITH', 'HOST', 'SANDBOX'],
          rows: b.items.map((n) => [n.type, n.inode, n.sharedWith, n.hostInode, n.sandboxInode]),
        }),
      },
    },
    async (req) => {
      const { all, target, join } = await containerCgroup(req.params.id, true);
      return containerNamespaces(fs, all, target, join.index);
    },
  );
};
