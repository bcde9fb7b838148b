/**
 * Which nodes: every Node (narrowed by --nodes and --node-selector), each with the
 * DaemonSet's agent pod on it if there is one. A node without a running agent, NotReady,
 * cordoned or tainted is kept and said so: it gets a row, never a wait.
 */
import { run, type Proc } from '../launcher/kubectl.js';
import type { FleetOptions } from './options.js';

export interface Target {
  node: string;
  /** the running agent pod on the node, or null (then `error` says why) */
  pod: string | null;
  /** the pod's host IP: the agent certificate's name when it is checked */
  hostIP: string | null;
  /** NotReady, unschedulable, taints: said beside the answer */
  notes: string[];
  /** why this node is not asked */
  error: string | null;
  /** asked through a debug pod of its own (--attach: the node has no agent pod) */
  attach?: true;
}

/** A list answer larger than this is refused (a cluster of 5,000 nodes lists in well under it). */
const MAX_LIST_BYTES = 256 * 1024 * 1024;

export function globalArgs(o: Pick<FleetOptions, 'kubeconfig' | 'context'>): string[] {
  return [...(o.kubeconfig ? [`--kubeconfig=${o.kubeconfig}`] : []), ...(o.context ? [`--context=${o.context}`] : [])];
}

/** kubectl, bounded by `ms` and by `stop`; its stdout, or an Error with kubectl's own words. */
export async function kubectlOut(args: string[], ms: number, track: (p: Proc) => () => void): Promise<string> {
  const p = run(args, { passStderr: null });
  const untrack = track(p);
  const timer = setTimeout(() => p.child.kill('SIGTERM'), ms);
  try {
    const r = await p.exited;
    if (r.code !== 0) throw new Error(`kubectl ${args.find((a) => !a.startsWith('-'))} exited with ${r.code ?? r.signal}: ${p.stderr.trim().slice(-500)}`);
    if (p.stdout.length > MAX_LIST_BYTES) throw new Error('kubectl answered more than 256 MiB');
    return p.stdout;
  } finally {
    clearTimeout(timer);
    untrack();
  }
}

interface K8sNode {
  metadata?: { name?: string };
  spec?: { unschedulable?: boolean; taints?: { key?: string; value?: string; effect?: string }[] };
  status?: { conditions?: { type?: string; status?: string }[] };
}
interface K8sPod {
  metadata?: { name?: string; deletionTimestamp?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string; hostIP?: string; conditions?: { type?: string; status?: string }[] };
}

function items<T>(text: string, what: string): T[] {
  let doc: { items?: unknown };
  try {
    doc = JSON.parse(text) as { items?: unknown };
  } catch {
    throw new Error(`kubectl get ${what}: not JSON`);
  }
  if (!Array.isArray(doc.items)) throw new Error(`kubectl get ${what}: no items`);
  return doc.items as T[];
}

/** The rows to ask, in node-name order, from the Node and agent Pod lists. */
function targetsOf(o: Pick<FleetOptions, 'nodes'> & Partial<Pick<FleetOptions, 'attach'>>, nodesText: string, podsText: string): Target[] {
  const nodes = items<K8sNode>(nodesText, 'nodes');
  const pods = items<K8sPod>(podsText, 'pods');
  const byNode = new Map<string, K8sPod[]>();
  for (const p of pods) {
    const n = p.spec?.nodeName;
    if (typeof n === 'string') byNode.set(n, [...(byNode.get(n) ?? []), p]);
  }
  const known = new Map<string, K8sNode>();
  for (const n of nodes) if (typeof n.metadata?.name === 'string') known.set(n.metadata.name, n);
  const names = o.nodes ?? [...known.keys()];
  const out: Target[] = [];
  for (const name of [...names].sort()) {
    const n = known.get(name);
    if (!n) {
      out.push({ node: name, pod: null, hostIP: null, notes: [], error: 'no such node (or not matched by --node-selector)' });
      continue;
    }
    const notes: string[] = [];
    const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status !== 'True') notes.push(ready ? `NotReady (Ready=${ready.status})` : 'NotReady (no Ready condition)');
    if (n.spec?.unschedulable) notes.push('cordoned');
    for (const t of (n.spec?.taints ?? []).slice(0, 8)) notes.push(`taint ${t.key ?? ''}${t.value ? `=${t.value}` : ''}:${t.effect ?? ''}`);
    const candidates = (byNode.get(name) ?? []).filter((p) => !p.metadata?.deletionTimestamp);
    const running = candidates.find((p) => p.status?.phase === 'Running');
    if (running?.metadata?.name) {
      out.push({ node: name, pod: running.metadata.name, hostIP: running.status?.hostIP ?? null, notes, error: null });
    } else {
      const other = candidates[0];
      if (!other && o.attach) {
        out.push({ node: name, pod: null, hostIP: null, notes: [...notes, 'no agent pod: asked through a debug pod (--attach)'], error: null, attach: true });
        continue;
      }
      out.push({
        node: name,
        pod: other?.metadata?.name ?? null,
        hostIP: null,
        notes,
        error: other ? `agent pod is ${other.status?.phase ?? 'in no phase'}, not Running` : 'no agent pod on this node (--attach asks it through a debug pod)',
      });
    }
  }
  return out;
}

/** List nodes and agent pods through kubectl, with the caller's kubeconfig. */
export async function listTargets(o: FleetOptions, ms: number, track: (p: Proc) => () => void): Promise<Target[]> {
  const g = globalArgs(o);
  const [nodesText, podsText] = await Promise.all([
    kubectlOut([...g, 'get', 'nodes', ...(o.nodeSelector ? [`--selector=${o.nodeSelector}`] : []), '--output=json', '--request-timeout=30s'], ms, track),
    kubectlOut([...g, 'get', 'pods', `--namespace=${o.namespace}`, `--selector=${o.selector}`, '--output=json', '--request-timeout=30s'], ms, track),
  ]);
  return targetsOf(o, nodesText, podsText);
}
