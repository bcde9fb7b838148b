/**
 * `nodetruth attach <node>` (also `kubectl nodetruth attach <node>`): a break-glass
 * session on one node through `kubectl` alone.
 *
 *   1. kubectl debug node/<node> --image=… --profile=sysadmin --custom=<profile> -- nodetruth serve,
 *      the profile with this session's id and secret token added (secret.ts);
 *      a pod whose name kubectl's output did not give is found by the session's id
 *   1b. kubectl patch pod/<name> spec.activeDeadlineSeconds=<--max-duration> and the label
 *      nodetruth.dev/session=<id>: the kubelet
 *      ends the privileged pod by itself even if this process is SIGKILLed. kubectl debug
 *      has no flag for it and --custom patches only the container, so it is set right
 *      after creation: the API allows adding it to a running pod (or lowering it), and
 *      the deadline counts from the pod's start, not from the patch.
 *   2. kubectl wait --for=condition=Ready pod/<name>   (the profile's probe hits /healthz)
 *   3. kubectl port-forward pod/<name> :7070 --address=127.0.0.1, and the launcher's own
 *      listener on 127.0.0.1:<--port> in front of it, adding the session's token to every
 *      request (proxy.ts): the agent answers no one else on the node
 *   4. print ready-to-paste curl commands (or, with --get, fetch those paths and print them)
 *   5. kubectl delete pod <name> --wait=false, on every way out: Ctrl-C, SIGTERM, an
 *      error at any step, the port-forward dying, or the end of --get.
 *
 * kubectl is always spawned with an argument array, never through a shell; every value
 * that reaches its argv is validated first and passed as `--flag=value`, so no value can
 * be read as another flag.
 */
import { kubectlArgs, type Io } from './kubectl.js';
import { captureTo, getPaths, holdSession } from './modes.js';
import { ATTACH_USAGE, movableImage, parseAttachArgs, UsageError, type AttachOptions } from './options.js';
import { createDebugPod, deletePod, setDeadline, waitReady } from './pod.js';
import { checkThrough, portForward } from './forward.js';
import { sessionProxy, type SessionProxy } from './proxy.js';
import { Session, Stopped, StepFailed } from './session.js';

// The command's surface, where its callers (cli.ts, tests, deploy checks) look for it.
export { curlLines } from './modes.js';
export { kubectlArgs } from './kubectl.js';
export { DEFAULT_IMAGE, IMAGE_DIGEST, movableImage, DEFAULT_PROFILE, parseAttachArgs, REMOTE_PORT, UsageError, type AttachOptions } from './options.js';

/**
 * Run a session: the steps above, in order. Resolves to the exit code; never leaves
 * the debug pod behind if it learnt its name. `signals` is the process (or a test's emitter).
 */
export async function attach(o: AttachOptions, io: Io, signals: NodeJS.EventEmitter = process): Promise<number> {
  const k = kubectlArgs(o);
  const s = new Session(io, signals);
  let proxy: SessionProxy | null = null;
  try {
    if (movableImage(o.image)) s.say(`image ${o.image} is a movable tag: a registry can change what it names under this privileged pod; pin it with @sha256:<digest>`);
    const pod = await createDebugPod(s, k, o);
    await setDeadline(s, k, pod);
    await waitReady(s, k, o, pod);
    const { forward, port: forwarded } = await portForward(s, k, pod);
    proxy = await sessionProxy(o.port, forwarded, s.secret.token);
    const port = proxy.port;
    const health = await checkThrough(s, port);
    if (o.capture) return await captureTo(s, o, port);
    if (o.get.length > 0) return await getPaths(s, o, port);
    return await holdSession(s, o, { pod, port, health, forward });
  } catch (err) {
    return exitCode(s, err);
  } finally {
    proxy?.close();
    await s.endKept();
    // A failed delete says how to delete the pod by hand; the exit code stays the session's.
    if (s.pod) await deletePod(s, k, s.pod);
    s.close();
  }
}

/** 130 / 143 for a signal, 1 (with the reason said) for a failed step or anything else. */
function exitCode(s: Session, err: unknown): number {
  if (err instanceof Stopped) return err.signal === 'SIGINT' ? 130 : 143;
  if (err instanceof StepFailed) s.say(err.message);
  else s.say(`unexpected error: ${(err as Error).stack ?? String(err)}`);
  return 1;
}

/** The `attach` command: parse, run, return the exit code. */
export async function attachMain(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(ATTACH_USAGE);
    return 0;
  }
  let o: AttachOptions;
  try {
    o = parseAttachArgs(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`nodetruth attach: ${err.message}\n\n${ATTACH_USAGE}`);
      return 2;
    }
    throw err;
  }
  return attach(o, { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) });
}
