import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Problem } from '../../errors.js';
import { compareDrift, toApiPod, type DriftReport } from '../../view/drift.js';
import type { AppDeps } from '../app.js';
import { requireRuntime } from '../../sources.js';
import { query } from '../schemas.js';
import { shortId, stateWord } from '../../format.js';
import { loadKubeClient, precheckKubeAccess } from '../../readers/kube/api.js';

function driftTable(b: DriftReport) {
  const rows: (string | number | null)[][] = [
    ...b.boundButAbsent.map((p) => ['bound-but-absent', `${p.namespace}/${p.name}`, p.uid, `API: ${p.phase}${p.deleting ? ' (deleting)' : ''}, ${p.ageSeconds ?? '?'}s old; runtime: no sandbox`]),
    ...b.orphanSandboxes.map((s) => ['orphan-sandbox', `${s.namespace}/${s.name}`, s.uid, `runtime: sandbox ${shortId(s.id)} ${stateWord(s.state)}; API: no pod bound to ${b.nodeName}`]),
    ...b.stateMismatches.map((m) => [
      'state-mismatch',
      `${m.namespace}/${m.pod}/${m.container}`,
      m.podUid,
      `API: ${m.api}${m.apiReason ? ` (${m.apiReason})` : ''}; runtime: ${m.runtime === 'absent' ? 'absent' : stateWord(m.runtime)}${m.exitCode !== null && m.runtime === 'CONTAINER_EXITED' ? ` exit ${m.exitCode}${m.runtimeReason ? ` ${m.runtimeReason}` : ''}` : ''} ${shortId(m.containerId)}`,
    ]),
  ];
  if (rows.length === 0) return `in sync: ${b.apiPods} pods bound to ${b.nodeName} in the API, ${b.sandboxes} sandboxes in the runtime\n`;
  return { columns: ['KIND', 'OBJECT', 'POD UID', 'DETAIL'], rows };
}

export const driftRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  app.get(
    '/v1/node/drift',
    {
      schema: {
        summary:
          "The API server's view against the runtime's, by pod UID: pods bound to this node but absent, orphan sandboxes, containers whose states disagree. 503 without cluster access.",
        querystring: query({}),
      },
      config: { table: driftTable },
    },
    async () => {
      // Check for access before loading client-node: its first load is slow on a small
      // node (62–86 s seen in the node VM), and without access there is nothing to load it for.
      const pre = precheckKubeAccess({ kubeconfig: deps.config.kubeconfig });
      if (!pre.ok) throw new Problem('no_cluster_credentials', `no view of the API server: ${pre.reason}`);
      await loadKubeClient();
      const access = deps.kube();
      if (!access.ok) throw new Problem('no_cluster_credentials', `no view of the API server: ${access.reason}`);
      const runtime = requireRuntime(deps);
      const [pods, sandboxes, containers] = await Promise.all([access.api.podsOnNode(deps.config.nodeName), runtime.pods(), runtime.containers()]);
      return compareDrift(deps.config.nodeName, pods.map(toApiPod), sandboxes, containers);
    },
  );
};
