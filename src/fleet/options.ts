/**
 * `nodetruth fleet triage | get PATH | capture -o DIR`: its flags, read by the one
 * argument parser (parseFlags) and the one duration grammar (parseDuration).
 */
import { parseFlags } from '../args.js';
import { parseAttachArgs } from '../launcher/options.js';
import { attachArgv } from './attach.js';
import { parseDuration } from '../format.js';

export class FleetUsageError extends Error {}

/**
 * The agent's loopback address in the DaemonSet (deploy/daemonset/core/daemonset.yaml:
 * --listen=$(POD_IP):7070,127.0.0.1:7071). A port-forward dials localhost in the pod's
 * network namespace, the node's own under hostNetwork; 7070 there is attach's.
 */
export const DEFAULT_AGENT_PORT = 7071;

export const FLEET_USAGE = `Usage:
  nodetruth fleet triage [flags]        every node's /v1/triage, rolled up, worst first
  nodetruth fleet get PATH [flags]      one GET route on every node, as JSON lines
  nodetruth fleet capture -o DIR [flags]  one bundle per node, plus DIR/index.json

Each node is reached by its DaemonSet agent through the API server (kubectl port-forward,
one session per node, with your kubeconfig); the agent checks your token itself.

Flags:
  --namespace NS          the agent's namespace (default nodetruth)
  --selector LABELS       the agent pods' labels (default app.kubernetes.io/name=nodetruth,app.kubernetes.io/component=agent)
  --nodes a,b             only these nodes
  --node-selector LABELS  only nodes with these labels
  --concurrency N         nodes at once (default 5, at most 100)
  --timeout DUR           per node (default 60s)
  --deadline DUR          for the whole run (default 10m)
  --agent-port N          the agent's loopback port inside its pod's network namespace (default 7071, as
                          the DaemonSet listens; a port-forward reaches the node's loopback there)
  --agent-ca FILE         the CA (or self-signed certificate) the agents' TLS must chain to
  --insecure-skip-agent-verify   accept any agent certificate (the token can then reach an impostor)
  --token-file FILE       the bearer token to present (default: NODETRUTH_FLEET_TOKEN, else your kubeconfig user's token)
  --kubeconfig FILE, --context NAME
  -o, --output text|json  (triage) the roll-up or [{ node, pod, verdict, findings | error, observedAt }]
  -o, --output DIR        (capture) where the bundles go
  --attach                nodes without an agent pod are asked through a debug pod each, started and
                          deleted as \`nodetruth attach\` does (privileged; its RBAC: deploy/attach-rbac.yaml),
                          within the same --concurrency and --timeout
  --attach-namespace NS   the debug pods' namespace (default: the context's; nodetruth-attach of
                          deploy/attach-rbac.yaml allows privileged pods)
  --attach-image IMAGE    the debug pods' image (default: attach's, env NODETRUTH_IMAGE)
`;

type FleetCommand = 'triage' | 'get' | 'capture';

export interface FleetOptions {
  command: FleetCommand;
  path: string;
  namespace: string;
  selector: string;
  nodes: string[] | null;
  nodeSelector: string | null;
  concurrency: number;
  timeoutMs: number;
  deadlineMs: number;
  agentPort: number;
  /** --attach: nodes without an agent pod get a debug pod each; null: they are reported */
  attach: { namespace: string | null; image: string | null } | null;
  agentCa: string | null;
  insecureSkipAgentVerify: boolean;
  tokenFile: string | null;
  kubeconfig: string | null;
  context: string | null;
  json: boolean;
  outDir: string | null;
}

const DEFAULT_SELECTOR = 'app.kubernetes.io/name=nodetruth,app.kubernetes.io/component=agent';

/** Kubernetes names, label selectors, contexts: what may reach kubectl's argv (always as --flag=value). */
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const SELECTOR = /^[A-Za-z0-9._/=!,() -]{1,1024}$/;
const CONTEXT = /^[A-Za-z0-9._@:/-]{1,253}$/;

/**
 * The routes `fleet get` may ask: the agent's GET routes, `:id` one path segment. No `..`,
 * no scheme or host (the path is joined to the forward's address, never parsed as a URL).
 */
const ROUTES = [
  '/metrics', '/v1/cgroups', '/v1/cgroups/:id', '/v1/containers', '/v1/containers/:id', '/v1/containers/:id/logs', '/v1/containers/:id/namespaces',
  '/v1/containers/:id/processes', '/v1/images', '/v1/images/fs', '/v1/kernel', '/v1/logs', '/v1/node', '/v1/node/drift', '/v1/oom', '/v1/pods', '/v1/pods/:id',
  '/v1/runtime', '/v1/throttling', '/v1/timeline', '/v1/triage',
];
const ROUTE_RES = ROUTES.map((r) => new RegExp(`^${r.replace(/:id/g, '[A-Za-z0-9._:-]{1,256}')}$`));
const QUERY = /^[A-Za-z0-9._~:=&%,+-]{0,1024}$/;

/** The PATH of `fleet get`, or why not. */
function checkPath(p: string): string {
  if (p.length > 2048) throw new FleetUsageError('PATH is longer than 2048 characters');
  const q = p.indexOf('?');
  const pathname = q < 0 ? p : p.slice(0, q);
  const query = q < 0 ? '' : p.slice(q + 1);
  if (!pathname.startsWith('/') || pathname.startsWith('//')) throw new FleetUsageError(`PATH must be a route such as /v1/oom, not ${JSON.stringify(p)}`);
  if (pathname.split('/').some((s) => s === '..' || s === '.')) throw new FleetUsageError('PATH may not hold . or .. segments');
  if (!ROUTE_RES.some((re) => re.test(pathname))) throw new FleetUsageError(`${JSON.stringify(pathname)} is not a GET route of the agent; one of: ${ROUTES.join(' ')}`);
  if (!QUERY.test(query)) throw new FleetUsageError('the query string holds characters a route does not take');
  return p;
}

function duration(name: string, text: string | undefined, dflt: number): number {
  if (text === undefined) return dflt;
  const ms = parseDuration(text);
  if (ms === null || ms <= 0) throw new FleetUsageError(`--${name}: not a duration: ${JSON.stringify(text)} (e.g. 30s, 2m)`);
  return ms;
}

/** --attach's values, checked by attach's own parser now rather than on the first node without an agent. */
function checkAttach(namespace: string | null, image: string | null, kubeconfig: string | null, context: string | null): FleetOptions['attach'] {
  try {
    parseAttachArgs(attachArgv('node', { namespace, image, kubeconfig, context, timeoutMs: 60_000, warn: () => {} }), {});
  } catch (err) {
    throw new FleetUsageError((err as Error).message.replace(/^--/, '--attach-'));
  }
  return { namespace, image };
}

export function parseFleetArgs(argv: string[]): FleetOptions {
  const { values: v, positionals } = parseFlags(
    argv,
    {
      namespace: { type: 'string', short: 'n' },
      selector: { type: 'string', short: 'l' },
      nodes: { type: 'string' },
      'node-selector': { type: 'string' },
      concurrency: { type: 'string' },
      timeout: { type: 'string' },
      deadline: { type: 'string' },
      'agent-port': { type: 'string' },
      'agent-ca': { type: 'string' },
      'insecure-skip-agent-verify': { type: 'boolean' },
      'token-file': { type: 'string' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      output: { type: 'string', short: 'o' },
      attach: { type: 'boolean' },
      'attach-namespace': { type: 'string' },
      'attach-image': { type: 'string' },
    },
    (m) => new FleetUsageError(m),
  );
  const [command, ...rest] = positionals;
  if (command !== 'triage' && command !== 'get' && command !== 'capture') throw new FleetUsageError(command === undefined ? 'which: triage, get PATH or capture -o DIR?' : `unknown fleet command ${JSON.stringify(command)}`);
  if (!v.attach && (v['attach-namespace'] !== undefined || v['attach-image'] !== undefined)) throw new FleetUsageError('--attach-namespace and --attach-image go with --attach');
  if (command === 'get' ? rest.length !== 1 : rest.length !== 0) throw new FleetUsageError(command === 'get' ? 'fleet get takes one PATH' : `unexpected argument ${JSON.stringify(rest[0])}`);
  const namespace = v.namespace ?? 'nodetruth';
  if (!NAME.test(namespace) || namespace.length > 63) throw new FleetUsageError(`--namespace: not a namespace name: ${JSON.stringify(namespace)}`);
  const selector = v.selector ?? DEFAULT_SELECTOR;
  if (!SELECTOR.test(selector)) throw new FleetUsageError('--selector: not a label selector');
  if (v['node-selector'] !== undefined && !SELECTOR.test(v['node-selector'])) throw new FleetUsageError('--node-selector: not a label selector');
  let nodes: string[] | null = null;
  if (v.nodes !== undefined) {
    nodes = [...new Set(v.nodes.split(',').filter((s) => s !== ''))];
    const bad = nodes.find((n) => !NAME.test(n));
    if (nodes.length === 0 || bad !== undefined) throw new FleetUsageError(`--nodes: not a node name: ${JSON.stringify(bad ?? v.nodes)}`);
  }
  const concurrency = Number(v.concurrency ?? 5);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 100) throw new FleetUsageError('--concurrency: a whole number from 1 to 100');
  const agentPort = Number(v['agent-port'] ?? DEFAULT_AGENT_PORT);
  if (!Number.isInteger(agentPort) || agentPort < 1 || agentPort > 65535) throw new FleetUsageError('--agent-port: a port number');
  if (v.context !== undefined && !CONTEXT.test(v.context)) throw new FleetUsageError('--context: not a context name');
  const agentCa = v['agent-ca'] ?? null;
  const insecure = v['insecure-skip-agent-verify'] ?? false;
  if (!agentCa && !insecure)
    throw new FleetUsageError(
      'pass --agent-ca FILE (the agents\' certificate or its CA): your token is sent to what answers on the node, and only a verified certificate says it is the agent (or --insecure-skip-agent-verify to accept any)',
    );
  let json = false;
  let outDir: string | null = null;
  if (command === 'capture') {
    if (!v.output) throw new FleetUsageError('fleet capture needs -o DIR');
    outDir = v.output;
  } else if (v.output !== undefined) {
    if (v.output !== 'json' && v.output !== 'text') throw new FleetUsageError('-o: text or json');
    json = v.output === 'json';
  }
  return {
    command,
    path: command === 'get' ? checkPath(rest[0]!) : command === 'triage' ? '/v1/triage' : '/v1/bundle',
    namespace,
    selector,
    nodes,
    nodeSelector: v['node-selector'] ?? null,
    concurrency,
    timeoutMs: duration('timeout', v.timeout, 60_000),
    deadlineMs: duration('deadline', v.deadline, 600_000),
    agentPort,
    attach: v.attach ? checkAttach(v['attach-namespace'] ?? null, v['attach-image'] ?? null, v.kubeconfig ?? null, v.context ?? null) : null,
    agentCa,
    insecureSkipAgentVerify: insecure,
    tokenFile: v['token-file'] ?? null,
    kubeconfig: v.kubeconfig ?? null,
    context: v.context ?? null,
    json,
    outDir,
  };
}
