/**
 * The debug pod's life: created by kubectl debug, given its activeDeadlineSeconds,
 * waited for, and deleted on every way out.
 */
import { delay, run, type KubectlArgs } from './kubectl.js';
import type { AttachOptions } from './options.js';
import { StepFailed, type Session } from './session.js';

/** What kubectl debug prints for a node (pkg/cmd/debug/debug.go, generateNodeDebugPod). */
const CREATED = /^Creating debugging pod (\S+) with container (\S+) on node (\S+)\.$/m;

/**
 * 1. kubectl debug node/<node>. The pod's name is printed before the create call, so
 * s.pod is set as soon as it shows and a pod whose creation was interrupted is still
 * deleted (--ignore-not-found if it never was).
 */
export async function createDebugPod(s: Session, k: KubectlArgs, o: AttachOptions): Promise<string> {
  s.say(`starting a debug pod on node ${o.node} (image ${o.image})`);
  let debug;
  try {
    debug = await s.step(k.debug, (all) => {
      s.pod ??= CREATED.exec(all)?.[1] ?? null;
    });
  } catch (err) {
    if (err instanceof StepFailed && /violates PodSecurity/.test(err.stderr)) {
      s.say('this namespace does not allow privileged pods; pass --namespace with one that does (e.g. the nodetruth namespace of deploy/daemonset, or kube-system)');
    }
    if (err instanceof StepFailed && /unknown flag: --(custom|profile)/.test(err.stderr)) {
      s.say('this kubectl is too old for custom debug profiles: kubectl 1.30 or newer is needed');
    }
    throw err;
  }
  s.pod ??= CREATED.exec(debug.stdout)?.[1] ?? null;
  if (!s.pod) throw new StepFailed(`could not find the debug pod's name in kubectl's output: ${JSON.stringify(debug.stdout.trim())}`);
  return s.pod;
}

/** 1b. The deadline, before anything else: from here on the pod ends by itself. */
export async function setDeadline(s: Session, k: KubectlArgs, pod: string): Promise<void> {
  try {
    await s.step(k.deadline(pod));
  } catch (err) {
    if (err instanceof StepFailed) {
      s.say(`could not set a deadline on pod ${pod}; it needs \`patch\` on pods (deploy/attach-rbac.yaml). Not going on without one: a privileged pod must not outlive its session`);
    }
    throw err;
  }
}

/** 2. Readiness: the profile's readiness probe hits /healthz, so Ready means "answers". */
export async function waitReady(s: Session, k: KubectlArgs, o: AttachOptions, pod: string): Promise<void> {
  s.say(`pod ${pod} created; waiting up to ${o.timeout} for it to be ready`);
  try {
    await s.step(k.wait(pod));
  } catch (err) {
    if (err instanceof StepFailed) {
      s.say(`pod ${pod} did not become ready; its last log lines (if any):`);
      const logs = run(k.logs(pod), { passStderr: s.io });
      await logs.exited;
      if (logs.stdout) s.io.err(logs.stdout.replace(/^/gm, '  | '));
    }
    throw err;
  }
}

/**
 * 5. kubectl delete pod, detached: its own process group, so a second Ctrl-C in the
 * terminal cannot kill it. False (and how to delete it by hand said) when it failed.
 */
export async function deletePod(s: Session, k: KubectlArgs, pod: string): Promise<boolean> {
  s.say(`deleting pod ${pod}`);
  const del = run(k.delete(pod), { passStderr: s.io, detached: true });
  const res = await Promise.race([del.exited, delay(30_000).then(() => null)]);
  if (!res) del.child.unref();
  if (res?.code === 0) {
    if (del.stdout.trim()) s.io.err(`${del.stdout.trim()}\n`);
    return true;
  }
  s.say(`could not delete pod ${pod}; delete it yourself: kubectl ${k.delete(pod).filter((a) => a !== '--ignore-not-found').join(' ')}`);
  return false;
}
