/**
 * The debug pod's life: created by kubectl debug, given its activeDeadlineSeconds,
 * waited for, and deleted on every way out.
 */
import { delay, run, type KubectlArgs } from './kubectl.js';
import type { AttachOptions } from './options.js';
import { customProfile, KUBECTL_DEBUG_LABEL, SESSION_ID_ENV } from './secret.js';
import { StepFailed, type Session } from './session.js';
import { DNS1123_SUBDOMAIN } from '../validate.js';

/** What kubectl debug prints for a node (pkg/cmd/debug/debug.go, generateNodeDebugPod). */
const CREATED = /^Creating debugging pod (\S+) with container (\S+) on node (\S+)\.$/m;

/**
 * 1. kubectl debug node/<node>, with the session's copy of the debug profile (its id and
 * token added, secret.ts), removed as soon as kubectl debug has ended. The pod's name is
 * printed before the create call, so s.pod is set as soon as it shows and a pod whose
 * creation was interrupted is still deleted (--ignore-not-found if it never was). When the line is not seen (kubectl -q in a
 * wrapper, another wording, kubectl killed or timed out after the create), the pod is
 * looked up by the session's id, whatever way kubectl debug ended: a privileged pod
 * must never be left without its deadline or its delete.
 */
export async function createDebugPod(s: Session, k: KubectlArgs, o: AttachOptions): Promise<string> {
  s.say(`starting a debug pod on node ${o.node} (image ${o.image})`);
  let profile;
  try {
    profile = customProfile(o.profilePath, s.secret);
  } catch (err) {
    throw new StepFailed(`--profile-path: ${(err as Error).message}`);
  }
  let debug;
  try {
    debug = await s.step(k.debug(profile.file), (all) => {
      s.pod ??= CREATED.exec(all)?.[1] ?? null;
    });
  } catch (err) {
    if (err instanceof StepFailed && /violates PodSecurity/.test(err.stderr)) {
      s.say('this namespace does not allow privileged pods; pass --namespace with one that does (e.g. nodetruth-attach of deploy/attach-rbac.yaml)');
    }
    const tooOld = err instanceof StepFailed && /unknown flag: --(custom|profile)/.test(err.stderr);
    if (tooOld) s.say('this kubectl is too old for custom debug profiles: kubectl 1.30 or newer is needed');
    // flag parsing failed, or kubectl did not run: nothing was created, nothing to look for
    const notRun = err instanceof StepFailed && /^(kubectl not found on PATH|cannot run kubectl)/m.test(err.stderr);
    if (!s.pod && !tooOld && !notRun) s.pod = await findSessionPod(s, k, o);
    throw err;
  } finally {
    profile.cleanup();
  }
  s.pod ??= CREATED.exec(debug.stdout)?.[1] ?? null;
  if (!s.pod) {
    s.say(`kubectl's output did not name the debug pod (${JSON.stringify(debug.stdout.trim().slice(0, 200))}); looking for it by this session's id ${s.secret.id}`);
    s.pod = await findSessionPod(s, k, o);
  }
  if (!s.pod) throw new StepFailed(`could not find the debug pod: kubectl debug named none, and no debug pod on node ${o.node} carries session id ${s.secret.id}`);
  return s.pod;
}

/**
 * The debug pod of this session on o.node, found by kubectl debug's own label, the node,
 * and the session id in its env; null if there is none or it could not be asked (said).
 * Not a session step: it runs after a signal too, on the way out.
 */
async function findSessionPod(s: Session, k: KubectlArgs, o: AttachOptions): Promise<string | null> {
  const get = run(k.findSession(), { passStderr: s.io });
  const res = await Promise.race([get.exited, delay(30_000).then(() => null)]);
  if (res?.code !== 0) {
    if (!res) get.child.kill('SIGTERM');
    s.say(
      `could not look for this session's debug pod; look yourself: kubectl get pods ${o.namespace ? `--namespace=${o.namespace} ` : ''}--selector=${KUBECTL_DEBUG_LABEL} --field-selector=spec.nodeName=${o.node}, and delete the one whose env ${SESSION_ID_ENV} is ${s.secret.id}`,
    );
    return null;
  }
  const names = get.stdout
    .split('\n', 10_000)
    .map((l) => l.split('\t'))
    .filter(([name, id]) => id === s.secret.id && name !== undefined && DNS1123_SUBDOMAIN.test(name))
    .map(([name]) => name!);
  if (names.length > 0) s.say(`found this session's debug pod ${names[0]} by its session id`);
  return names[0] ?? null;
}

/** 1b. The deadline, before anything else: from here on the pod ends by itself. */
export async function setDeadline(s: Session, k: KubectlArgs, pod: string): Promise<void> {
  try {
    await s.step(k.deadline(pod, s.secret.id));
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
  s.say(`could not delete pod ${pod}; delete it yourself: kubectl ${k.delete(pod).filter((a) => a !== '--ignore-not-found').join(' ')} (once labelled, also: kubectl ${k.deleteSession(s.secret.id).join(' ')})`);
  return false;
}
