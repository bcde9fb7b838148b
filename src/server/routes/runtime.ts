import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ContainerState, Image, ImageFsInfo, PodSandbox, RuntimeFeatures, RuntimeHandler, RuntimeStatus, SandboxState } from '../../model/runtime.js';
import { cgroupDriverOf } from '../../readers/cri/normalize.js';
import type { CgroupSource } from '../../view/named-cgroups.js';
import { statusWarnings, type ContainerRow } from '../../view/runtime-view.js';
import type { AppDeps } from '../app.js';
import { requireRuntime } from '../../sources.js';
import { idParams, k8sName, k8sNamespace, labelSelector, query } from '../schemas.js';
import { ago, humanSize, shortId, stateWord } from '../../format.js';

const containerState = z
  .string()
  .transform((s) => s.toLowerCase().replace(/^container_/, ''))
  .pipe(z.enum(['created', 'running', 'exited', 'unknown']))
  .transform((s) => `CONTAINER_${s.toUpperCase()}` as ContainerState);

const sandboxState = z
  .string()
  .transform((s) => s.toLowerCase().replace(/^sandbox_/, ''))
  .pipe(z.enum(['ready', 'notready']))
  .transform((s) => `SANDBOX_${s.toUpperCase()}` as SandboxState);

/** A name filter is a plain substring: user regexes would invite ReDoS. */
const nameFilter = z.string().min(1).max(253).regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, . _ - only (substring match)');

const matchesLabels = (labels: Record<string, string>, selector: Record<string, string> | undefined) =>
  !selector || Object.entries(selector).every(([k, v]) => labels[k] === v);

export const runtimeRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  app.get(
    '/v1/runtime',
    {
      schema: {
        summary: 'CRI Version and Status: runtime and network readiness, features, runtime handlers, cgroup driver, config',
        description: RUNTIME_DESCRIPTION,
        querystring: query({}),
      },
      config: { table: runtimeTable },
    },
    async () => {
      const cri = requireRuntime(deps).cri;
      const [version, status] = await Promise.all([cri.version(), cri.status(true)]);
      return {
        ...version,
        endpoint: cri.endpoint,
        conditions: status.conditions,
        features: status.features ?? null,
        runtimeHandlers: status.runtimeHandlers,
        cgroupDriver: cgroupDriverOf(status.info),
        info: status.info,
        warnings: status.warnings ?? [],
      };
    },
  );

  app.get(
    '/v1/pods',
    {
      schema: {
        summary: 'Pod sandboxes, as crictl pods lists them',
        querystring: query({
          namespace: k8sNamespace.optional().describe('exact namespace'),
          name: nameFilter.optional().describe('substring of the pod name'),
          state: sandboxState.optional().describe('ready, notready (or the CRI names SANDBOX_READY, SANDBOX_NOTREADY), any case'),
          label: labelSelector.describe('key=value, repeatable (at most 16)'),
        }),
      },
      config: { table: (b: { items: PodSandbox[] }) => podsTable(b.items) },
    },
    async (req) => {
      const q = req.query;
      const pods = await requireRuntime(deps).pods();
      const items = pods
        .filter((p) => (!q.namespace || p.namespace === q.namespace) && (!q.name || p.name.includes(q.name)))
        .filter((p) => (!q.state || p.state === q.state) && matchesLabels(p.labels, q.label))
        .sort(newestFirst);
      return { items };
    },
  );

  app.get(
    '/v1/pods/:id',
    {
      schema: { summary: 'One pod sandbox: status, network, namespace options, its containers and cgroups', params: idParams, querystring: query({}) },
      config: { table: (b: { containers: ContainerRow[] }) => containersTable(b.containers) },
    },
    async (req) => {
      const runtime = requireRuntime(deps);
      const pod = await runtime.resolvePod(req.params.id);
      const [detail, containers, cgroups] = await Promise.all([
        runtime.cri.podSandboxStatus(pod.id, true),
        runtime.containersOf(pod.id),
        podCgroups(deps.cgroups, pod.uid),
      ]);
      return { ...detail, containers, cgroups, warnings: statusWarnings(containers) };
    },
  );

  app.get(
    '/v1/containers',
    {
      schema: {
        summary: 'All containers, as crictl ps -a lists them, with exit code, reason and times from ContainerStatus',
        querystring: query({
          state: containerState.optional().describe('created, running, exited, unknown (or the CRI names CONTAINER_RUNNING, ...), any case'),
          pod: z.string().max(64).regex(/^[0-9a-f]+$/, 'a pod sandbox id or prefix (hex)').optional().describe('pod sandbox id prefix'),
          name: nameFilter.optional().describe('substring of the container name'),
          namespace: k8sNamespace.optional().describe("exact namespace of the container's pod"),
          podName: k8sName.optional().describe("exact name of the container's pod"),
          label: labelSelector.describe('key=value, repeatable (at most 16)'),
        }),
      },
      config: { table: (b: { items: ContainerRow[] }) => containersTable(b.items) },
    },
    async (req) => {
      const q = req.query;
      const rows = await requireRuntime(deps).containers();
      const items = rows
        .filter((c) => (!q.state || c.state === q.state) && (!q.pod || c.podId.startsWith(q.pod)))
        .filter((c) => (!q.name || c.name.includes(q.name)) && (!q.namespace || c.podNamespace === q.namespace))
        .filter((c) => (!q.podName || c.podName === q.podName) && matchesLabels(c.labels, q.label))
        .sort(newestFirst);
      return { items, warnings: statusWarnings(items) };
    },
  );

  app.get(
    '/v1/containers/:id',
    {
      schema: {
        summary: 'Full container status (crictl inspect) with environment values and secrets redacted, main pid and restart history',
        params: idParams,
        querystring: query({}),
      },
    },
    async (req) => {
      const runtime = requireRuntime(deps);
      const row = await runtime.resolveContainer(req.params.id);
      const [status, attempts] = await Promise.all([runtime.cri.containerStatus(row.id, true), runtime.attemptsOf(row)]);
      const info = (status.info.info ?? {}) as { pid?: number; runtimeSpec?: { linux?: { cgroupsPath?: string } } };
      return {
        ...status,
        podId: row.podId,
        podName: row.podName,
        podNamespace: row.podNamespace,
        podUid: row.podUid,
        pid: typeof info.pid === 'number' && info.pid > 0 ? info.pid : null,
        cgroupsPath: info.runtimeSpec?.linux?.cgroupsPath ?? null,
        restarts: attempts.map((c) => ({ id: c.id, attempt: c.attempt, state: c.state, exitCode: c.exitCode, reason: c.reason, startedAt: c.startedAt, finishedAt: c.finishedAt })),
      };
    },
  );

  app.get(
    '/v1/images',
    {
      schema: {
        summary: 'Images, as crictl images lists them',
        querystring: query({ image: z.string().min(1).max(512).regex(/^[A-Za-z0-9._:/@-]+$/, 'an image reference').optional().describe('substring of a repo tag or the image id') }),
      },
      config: { table: (b: { items: Image[] }) => imagesTable(b.items) },
    },
    async (req) => {
      const images = await requireRuntime(deps).cri.listImages();
      const wanted = req.query.image;
      const items = wanted ? images.filter((i) => i.repoTags.some((t) => t.includes(wanted)) || i.id.includes(wanted)) : images;
      return { items };
    },
  );

  app.get(
    '/v1/images/fs',
    {
      schema: { summary: 'Image and container filesystem usage (crictl imagefsinfo)', querystring: query({}) },
      config: {
        table: (b: ImageFsInfo) => ({
          columns: ['KIND', 'MOUNTPOINT', 'USED', 'INODES'],
          rows: [
            ...b.imageFilesystems.map((f) => ['image', f.mountpoint, f.usedBytes === null ? '' : humanSize(f.usedBytes), f.inodesUsed]),
            ...b.containerFilesystems.map((f) => ['container', f.mountpoint, f.usedBytes === null ? '' : humanSize(f.usedBytes), f.inodesUsed]),
          ],
        }),
      },
    },
    async () => requireRuntime(deps).cri.imageFsInfo(),
  );
};

/**
 * The pod's cgroup and its containers' (pod first); an error text instead when cgroups cannot be read here.
 * One that cannot be listed or read is skipped and named in `warnings`, the others stand.
 */
async function podCgroups(cgroups: CgroupSource, uid: string) {
  try {
    // unnamed: the pod's names are the answer's own, from its sandbox
    const { items, warnings } = await cgroups.records({ podUid: uid, names: false });
    return { items, error: null, warnings };
  } catch (err) {
    return { items: [], error: (err as Error).message, warnings: [] };
  }
}

/**
 * Newest first by createdAt: the runtime's times are RFC 3339 in one fixed width (normalize.ts,
 * nanoseconds, Z), so code-unit order is time order; localeCompare gives the same order through
 * ICU at ~10x the cost, over every row of every request (3,000 rows in one stretch).
 */
function newestFirst(a: { createdAt: string | null }, b: { createdAt: string | null }): number {
  const x = a.createdAt ?? '';
  const y = b.createdAt ?? '';
  return x < y ? 1 : x > y ? -1 : 0;
}

const NOT_REPORTED = 'not reported by the runtime';

const RUNTIME_DESCRIPTION = [
  '`features` is the CRI StatusResponse RuntimeFeatures (`supplementalGroupsPolicy`, `userNamespacesHostNetwork`, `mountOptions`);',
  '`runtimeHandlers` lists `{name, features: {recursiveReadOnlyMounts, userNamespaces}}` (name "" is the default handler).',
  'A feature that is false was reported as not supported; `features: null` (the runtime-wide message, or one handler\'s) means the runtime',
  'reported nothing (containerd 1.6 sends neither; 2.x leaves a handler\'s null when it could not introspect its OCI runtime), so support is unknown.',
  'An empty `runtimeHandlers` means the runtime listed none. `cgroupDriver` comes from the verbose config as containerd 2.x decides it',
  '(default handler first, the first runc handler\'s SystemdCgroup option); null when the config does not say.',
].join(' ');

/** Conditions, then each feature with its flag; what the runtime did not report has no STATUS and says so. */
function runtimeTable(b: { conditions: RuntimeStatus['conditions']; features: RuntimeFeatures | null; runtimeHandlers: RuntimeHandler[] }) {
  const rows: (string | boolean | null)[][] = b.conditions.map((c) => [c.type, c.status, c.reason, c.message]);
  if (b.features === null) rows.push(['features', null, '', NOT_REPORTED]);
  else for (const [k, v] of Object.entries(b.features)) rows.push([`feature ${k}`, v, '', '']);
  if (b.runtimeHandlers.length === 0) rows.push(['handlers', null, '', NOT_REPORTED]);
  for (const h of b.runtimeHandlers) {
    const name = `handler ${h.name || '(default)'}`;
    if (h.features === null) rows.push([name, null, '', `features ${NOT_REPORTED}`]);
    else for (const [k, v] of Object.entries(h.features)) rows.push([`${name} ${k}`, v, '', '']);
  }
  return { columns: ['CONDITION', 'STATUS', 'REASON', 'MESSAGE'], rows };
}

function containersTable(items: ContainerRow[]) {
  return {
    columns: ['CONTAINER', 'IMAGE', 'CREATED', 'STATE', 'NAME', 'ATTEMPT', 'POD ID', 'POD', 'NAMESPACE'],
    rows: items.map((c) => [shortId(c.id), c.image, ago(c.createdAt), stateWord(c.state), c.name, c.attempt, shortId(c.podId), c.podName, c.podNamespace]),
  };
}

function podsTable(items: PodSandbox[]) {
  return {
    columns: ['POD ID', 'CREATED', 'STATE', 'NAME', 'NAMESPACE', 'ATTEMPT', 'RUNTIME'],
    rows: items.map((p) => [shortId(p.id), ago(p.createdAt), stateWord(p.state), p.name, p.namespace, p.attempt, p.runtimeHandler || '(default)']),
  };
}

function imagesTable(items: Image[]) {
  const rows: (string | number)[][] = [];
  for (const i of items) {
    const tags = i.repoTags.length > 0 ? i.repoTags : ['<none>:<none>'];
    for (const t of tags) {
      const colon = t.lastIndexOf(':');
      rows.push([t.slice(0, colon), t.slice(colon + 1), shortId(i.id.replace(/^sha256:/, '')), humanSize(i.size)]);
    }
  }
  return { columns: ['IMAGE', 'TAG', 'IMAGE ID', 'SIZE'], rows };
}
