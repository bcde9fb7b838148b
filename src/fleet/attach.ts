/**
 * `fleet --attach`: a node with no agent pod is asked through a debug pod of its own, made
 * and ended exactly as `nodetruth attach <node> --get PATH` does (src/launcher): kubectl debug
 * with the session's secret in the profile, the activeDeadlineSeconds patch before anything
 * else, kubectl wait, a port-forward to the agent's 127.0.0.1:7070 in the pod, one GET carrying
 * the session's secret, and kubectl delete on every way out (answer, error, the node's
 * deadline, Ctrl-C). The node's --timeout covers all of it; the pod's own deadline is that plus
 * a minute, so the kubelet ends it even if fleet is killed.
 *
 * The debug pod's agent runs --auth none behind its session secret: the caller is checked by
 * the API server (pods create in the attach namespace, pods/portforward), not by the agent,
 * as for `nodetruth attach`.
 */
import { EventEmitter } from 'node:events';
import { unlink } from 'node:fs/promises';
import http from 'node:http';
import type https from 'node:https';
import { kubectlArgs } from '../launcher/kubectl.js';
import { parseAttachArgs } from '../launcher/options.js';
import { createDebugPod, deletePod, setDeadline, waitReady } from '../launcher/pod.js';
import { portForward } from '../launcher/forward.js';
import { Session, Stopped, StepFailed } from '../launcher/session.js';
import { SESSION_HEADER } from '../server/plugins/session-secret.js';
import { get, NodeError, type Answer } from './reach.js';

interface AttachReach {
  kubeconfig: string | null;
  context: string | null;
  /** the debug pods' namespace (it must allow privileged pods: deploy/attach-rbac.yaml) */
  namespace: string | null;
  image: string | null;
  /** the node's --timeout, ms */
  timeoutMs: number;
  /** what the run must say even when the node answered: a debug pod that could not be deleted */
  warn: (s: string) => void;
}

/** What `nodetruth attach` would be given for this node, so that its own checks apply. */
export function attachArgv(node: string, a: AttachReach): string[] {
  const s = Math.max(1, Math.ceil(a.timeoutMs / 1000));
  return [
    node,
    ...(a.kubeconfig ? [`--kubeconfig=${a.kubeconfig}`] : []),
    ...(a.context ? [`--context=${a.context}`] : []),
    ...(a.namespace ? [`--namespace=${a.namespace}`] : []),
    ...(a.image ? [`--image=${a.image}`] : []),
    `--timeout=${s}s`,
    `--max-duration=${Math.max(60, s + 60)}s`,
  ];
}

/** The last lines the session said (kubectl's stderr included), for the node's error. */
const tail = (said: string[]) =>
  said
    .join('')
    .trim()
    .split('\n')
    .slice(-2)
    .join(' / ')
    .slice(0, 300);

/** GET `path` on `node` through a debug pod of its own; the pod is deleted before this returns. */
export async function reachByAttach(node: string, path: string, a: AttachReach, signal: AbortSignal, toFile?: string): Promise<Answer> {
  const o = parseAttachArgs(attachArgv(node, a), {});
  const k = kubectlArgs(o);
  const said: string[] = [];
  const io = {
    out: () => {},
    err: (s: string) => {
      said.push(s.slice(0, 2000));
      if (said.length > 20) said.shift();
    },
  };
  // the session's own signals: the node's deadline or the run's stop ends it as a SIGTERM would
  const signals = new EventEmitter();
  const s = new Session(io, signals);
  const stop = () => signals.emit('SIGTERM', 'SIGTERM');
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
  try {
    const pod = await createDebugPod(s, k, o);
    await setDeadline(s, k, pod);
    await waitReady(s, k, o, pod);
    const { port } = await portForward(s, k, pod);
    s.checkStopped();
    const via = { get: http.get as unknown as typeof https.get, options: { headers: { [SESSION_HEADER]: s.secret.token, accept: 'application/json', host: '127.0.0.1' } } };
    const written = { file: false };
    try {
      return await get(port, path, via, signal, toFile, written);
    } catch (err) {
      // a bundle cut short is not left beside the whole ones
      if (written.file && toFile) await unlink(toFile).catch(() => {});
      throw err;
    }
  } catch (err) {
    if (err instanceof Stopped || signal.aborted) throw new NodeError(String((signal.reason as Error)?.message ?? 'stopped'));
    if (err instanceof StepFailed) throw new NodeError(`attach: ${err.message}${tail(said) ? `: ${tail(said)}` : ''}`);
    throw err;
  } finally {
    signal.removeEventListener('abort', stop);
    await s.endKept();
    // a failed delete says how to delete the pod by hand; its deadline ends it anyway
    if (s.pod && !(await deletePod(s, k, s.pod))) a.warn(`${node}: ${tail(said)}`);
    s.close();
  }
}
