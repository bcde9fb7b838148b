/**
 * `nodetruth attach <node>` (also `kubectl nodetruth attach <node>`): a break-glass
 * session on one node through `kubectl` alone.
 *
 *   1. kubectl debug node/<node> --image=… --profile=sysadmin --custom=<profile> -- nodetruth serve
 *   1b. kubectl patch pod/<name> spec.activeDeadlineSeconds=<--max-duration>: the kubelet
 *      ends the privileged pod by itself even if this process is SIGKILLed. kubectl debug
 *      has no flag for it and --custom patches only the container, so it is set right
 *      after creation: the API allows adding it to a running pod (or lowering it), and
 *      the deadline counts from the pod's start, not from the patch.
 *   2. kubectl wait --for=condition=Ready pod/<name>   (the profile's probe hits /healthz)
 *   3. kubectl port-forward pod/<name> <port>:7070 --address=127.0.0.1
 *   4. print ready-to-paste curl commands (or, with --get, fetch those paths and print them)
 *   5. kubectl delete pod <name> --wait=false, on every way out: Ctrl-C, SIGTERM, an
 *      error at any step, the port-forward dying, or the end of --get.
 *
 * kubectl is always spawned with an argument array, never through a shell; every value
 * that reaches its argv is validated first and passed as `--flag=value`, so no value can
 * be read as another flag.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { defaultBundleName } from '../bundle/format.js';
import { DNS1123_LABEL, DNS1123_SUBDOMAIN } from '../validate.js';
import { VERSION } from '../version.js';

/** Where nodetruth listens inside the debug pod: its default loopback address. */
export const REMOTE_PORT = 7070;
export const DEFAULT_IMAGE = `ghcr.io/nodetruth/nodetruth:${VERSION}`;
/** How long a debug pod may live (activeDeadlineSeconds): a session, not a deployment. */
export const DEFAULT_MAX_DURATION = '4h';
const MAX_DURATION_BOUNDS_S = { min: 60, max: 7 * 24 * 3600 };
/** deploy/debug-profile.yaml, next to dist/ (or src/) in the package. */
export const DEFAULT_PROFILE = fileURLToPath(new URL('../../deploy/debug-profile.yaml', import.meta.url));

/** What kubectl debug prints for a node (pkg/cmd/debug/debug.go, generateNodeDebugPod). */
const CREATED = /^Creating debugging pod (\S+) with container (\S+) on node (\S+)\.$/m;
/** What client-go's port forwarder prints once it listens (tools/portforward). */
const FORWARDING = /^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)$/m;

const notAFlag = (what: string) => z.string().min(1).refine((s) => !s.startsWith('-'), `${what} must not start with "-"`);

const optionsSchema = z.object({
  node: z.string().regex(DNS1123_SUBDOMAIN, 'node: expected a node name (DNS-1123 subdomain)'),
  image: notAFlag('--image').refine((s) => !/\s/.test(s), '--image must not contain whitespace'),
  namespace: z.string().regex(DNS1123_LABEL, '--namespace: expected a namespace name (DNS-1123 label)').nullable(),
  port: z.coerce.number().int().min(0, '--port: 0..65535').max(65535, '--port: 0..65535'),
  kubeconfig: notAFlag('--kubeconfig').nullable(),
  context: notAFlag('--context').nullable(),
  profilePath: notAFlag('--profile-path'),
  timeout: z.string().regex(/^\d+(s|m|h)$/, '--timeout: expected a duration such as 90s or 2m'),
  maxDurationSeconds: z
    .string()
    .regex(/^\d{1,9}(s|m|h)$/, '--max-duration: expected a duration such as 4h or 90m')
    .transform((s) => Number(s.slice(0, -1)) * { s: 1, m: 60, h: 3600 }[s.slice(-1) as 's' | 'm' | 'h'])
    .refine((n) => n >= MAX_DURATION_BOUNDS_S.min && n <= MAX_DURATION_BOUNDS_S.max, '--max-duration: between 1m and 168h'),
  get: z.array(z.string().regex(/^\/[\x21-\x7e]*$/, '--get: expected a path such as /v1/triage?format=text')),
  /** --capture: download GET /v1/bundle into `output` (default nodetruth-<node>-<time>.tar.gz), then clean up */
  capture: z.boolean(),
  output: z.string().min(1).nullable(),
});
export type AttachOptions = z.output<typeof optionsSchema>;

export class UsageError extends Error {
  override name = 'UsageError';
}

export const ATTACH_USAGE = `Usage:
  nodetruth attach <node> [flags]
  kubectl nodetruth attach <node> [flags]

Starts nodetruth in a debug pod on <node> (kubectl debug --profile=sysadmin), waits for it,
port-forwards it to 127.0.0.1 and prints curl commands. Ctrl-C ends the session and deletes
the pod; so does any error.

Flags:
  --image IMAGE          nodetruth image (default ${DEFAULT_IMAGE}; env NODETRUTH_IMAGE)
  -n, --namespace NS     namespace of the debug pod (default: the context's); it must allow
                         privileged pods (Pod Security "privileged")
  --port PORT            local port on 127.0.0.1 (default ${REMOTE_PORT}; 0 picks a free one)
  --kubeconfig FILE      passed to kubectl
  --context NAME         passed to kubectl
  --profile-path FILE    custom debug profile (default: the packaged deploy/debug-profile.yaml)
  --timeout DURATION     how long to wait for the pod to be ready (default 2m)
  --max-duration DURATION
                         the debug pod's activeDeadlineSeconds: the kubelet ends it after
                         this long even if attach is killed (default ${DEFAULT_MAX_DURATION}, 1m..168h)
  --get PATH             fetch PATH (repeatable), print it, clean up and exit instead of
                         waiting for Ctrl-C; exit 1 if any answer is not 2xx
  --capture              capture the node into a bundle (GET /v1/bundle), download it, clean up
                         and exit; -o FILE (default nodetruth-<node>-<UTC time>.tar.gz); then
                         nodetruth serve --bundle FILE answers the same API from it, offline
`;

export function parseAttachArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): AttachOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        image: { type: 'string' },
        namespace: { type: 'string', short: 'n' },
        port: { type: 'string' },
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        'profile-path': { type: 'string' },
        timeout: { type: 'string' },
        'max-duration': { type: 'string' },
        get: { type: 'string', multiple: true },
        capture: { type: 'boolean' },
        output: { type: 'string', short: 'o' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values: v, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'which node? nodetruth attach <node>' : `one node at a time, got ${positionals.join(' ')}`);
  const result = optionsSchema.safeParse({
    node: positionals[0],
    image: v.image ?? (env.NODETRUTH_IMAGE || DEFAULT_IMAGE),
    namespace: v.namespace ?? null,
    port: v.port ?? REMOTE_PORT,
    kubeconfig: v.kubeconfig ?? null,
    context: v.context ?? null,
    profilePath: v['profile-path'] ?? DEFAULT_PROFILE,
    timeout: v.timeout ?? '2m',
    maxDurationSeconds: v['max-duration'] ?? DEFAULT_MAX_DURATION,
    get: v.get ?? [],
    capture: v.capture ?? false,
    output: v.output ?? null,
  });
  if (!result.success) throw new UsageError(result.error.issues.map((i) => i.message).join('\n'));
  if (!existsSync(result.data.profilePath)) throw new UsageError(`--profile-path: no such file ${result.data.profilePath}`);
  return result.data;
}

/** The kubectl argument lists the launcher runs, in order (exported for tests and --help). */
export function kubectlArgs(o: AttachOptions) {
  const global = [
    ...(o.kubeconfig ? [`--kubeconfig=${o.kubeconfig}`] : []),
    ...(o.context ? [`--context=${o.context}`] : []),
    ...(o.namespace ? [`--namespace=${o.namespace}`] : []),
  ];
  return {
    debug: [...global, 'debug', `node/${o.node}`, `--image=${o.image}`, '--profile=sysadmin', `--custom=${o.profilePath}`, '--', 'nodetruth', 'serve'],
    deadline: (pod: string) => [...global, 'patch', `pod/${pod}`, '--type=merge', `--patch={"spec":{"activeDeadlineSeconds":${o.maxDurationSeconds}}}`],
    wait: (pod: string) => [...global, 'wait', '--for=condition=Ready', `pod/${pod}`, `--timeout=${o.timeout}`],
    portForward: (pod: string) => [...global, 'port-forward', `pod/${pod}`, `${o.port === 0 ? '' : o.port}:${REMOTE_PORT}`, '--address=127.0.0.1'],
    logs: (pod: string) => [...global, 'logs', `pod/${pod}`, '--tail=20'],
    delete: (pod: string) => [...global, 'delete', 'pod', pod, '--wait=false', '--ignore-not-found'],
  };
}

/** The curl lines printed once the session is up. Single-quoted: they are pasted into a shell. */
export function curlLines(port: number): string[] {
  const base = `http://127.0.0.1:${port}`;
  return [
    '/readyz?format=text',
    '/v1/triage?format=text',
    '/v1/runtime?format=text',
    '/v1/containers?format=text',
    '/v1/oom?format=text',
    '/v1/throttling?window=5s&format=text',
    '/v1/node?format=text',
    '/v1/logs?query=kubelet&tailLines=50&format=text',
    '/v1/kernel?tailLines=50&format=text',
    '/metrics',
  ].map((p) => `curl -s '${base}${p}'`);
}

interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
}

interface Proc {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const KUBECTL = 'kubectl';

function run(args: string[], opts: { passStderr: Io | null; detached?: boolean; onStdout?: (all: string) => void }): Proc {
  // kubectl 1.30 has --custom behind this gate (1.31 turns it on by default, 1.32 drops it).
  const env = { ...process.env, KUBECTL_DEBUG_CUSTOM_PROFILE: process.env.KUBECTL_DEBUG_CUSTOM_PROFILE ?? 'true' };
  const child = spawn(KUBECTL, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: opts.detached ?? false, env });
  const p: Proc = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => {
      child.once('error', (err: NodeJS.ErrnoException) => {
        p.stderr += err.code === 'ENOENT' ? `${KUBECTL} not found on PATH\n` : `cannot run ${KUBECTL}: ${err.message}\n`;
        opts.passStderr?.err(p.stderr);
        resolve({ code: 127, signal: null });
      });
      child.once('close', (code, signal) => resolve({ code, signal }));
    }),
  };
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    p.stdout += d;
    opts.onStdout?.(p.stdout);
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    p.stderr += d;
    opts.passStderr?.err(d);
  });
  return p;
}

class Stopped extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`stopped by ${signal}`);
  }
}

class StepFailed extends Error {
  constructor(
    message: string,
    readonly stderr = '',
  ) {
    super(message);
  }
}

/**
 * Run a session. Resolves to the exit code; never leaves the debug pod behind if it
 * learnt its name. `signals` is the process (or a test's emitter).
 */
export async function attach(o: AttachOptions, io: Io, signals: NodeJS.EventEmitter = process): Promise<number> {
  const k = kubectlArgs(o);
  const say = (s: string) => io.err(`nodetruth attach: ${s}\n`);
  let pod: string | null = null;
  let current: Proc | null = null;
  let stopSignal: NodeJS.Signals | null = null;
  let wake: (() => void) | null = null;
  const stopped = new Promise<void>((resolve) => (wake = resolve));
  let cleaningUp = false;

  const onSignal = (sig: NodeJS.Signals) => {
    if (stopSignal) {
      if (cleaningUp) say(`${sig} again: still deleting pod ${pod ?? ''}, one moment`);
      return;
    }
    stopSignal = sig;
    say(`${sig}: ending the session`);
    // A Ctrl-C in a terminal reaches kubectl too (same process group); SIGTERM sent to
    // us alone does not, so end the running step ourselves either way.
    if (current && current.child.exitCode === null && current.child.signalCode === null) current.child.kill('SIGTERM');
    wake?.();
  };
  const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of SIGNALS) signals.on(s, onSignal);

  /** Run one kubectl step to its end; throws Stopped if a signal came first. */
  const step = async (args: string[], onStdout?: (all: string) => void): Promise<Proc> => {
    if (stopSignal) throw new Stopped(stopSignal);
    current = run(args, { passStderr: io, ...(onStdout ? { onStdout } : {}) });
    const res = await current.exited;
    const p = current;
    current = null;
    if (stopSignal) throw new Stopped(stopSignal);
    if (res.code !== 0) throw new StepFailed(`kubectl ${args.find((a) => !a.startsWith('--')) ?? ''} exited with ${res.code ?? res.signal}`, p.stderr);
    return p;
  };

  let code = 1;
  let forward: Proc | null = null;
  try {
    // 1. the debug pod. Its name is printed before the create call, so a pod whose
    // creation was interrupted is still deleted (--ignore-not-found if it never was).
    say(`starting a debug pod on node ${o.node} (image ${o.image})`);
    let debug: Proc;
    try {
      debug = await step(k.debug, (all) => {
        pod ??= CREATED.exec(all)?.[1] ?? null;
      });
    } catch (err) {
      if (err instanceof StepFailed && /violates PodSecurity/.test(err.stderr)) {
        say('this namespace does not allow privileged pods; pass --namespace with one that does (e.g. the nodetruth namespace of deploy/daemonset, or kube-system)');
      }
      if (err instanceof StepFailed && /unknown flag: --(custom|profile)/.test(err.stderr)) {
        say('this kubectl is too old for custom debug profiles: kubectl 1.30 or newer is needed');
      }
      throw err;
    }
    pod ??= CREATED.exec(debug.stdout)?.[1] ?? null;
    if (!pod) throw new StepFailed(`could not find the debug pod's name in kubectl's output: ${JSON.stringify(debug.stdout.trim())}`);

    // 1b. the deadline, before anything else: from here on the pod ends by itself.
    try {
      await step(k.deadline(pod));
    } catch (err) {
      if (err instanceof StepFailed) {
        say(`could not set a deadline on pod ${pod}; it needs \`patch\` on pods (deploy/attach-rbac.yaml). Not going on without one: a privileged pod must not outlive its session`);
      }
      throw err;
    }

    // 2. readiness: the profile's readiness probe hits /healthz, so Ready means "answers".
    say(`pod ${pod} created; waiting up to ${o.timeout} for it to be ready`);
    try {
      await step(k.wait(pod));
    } catch (err) {
      if (err instanceof StepFailed) {
        say(`pod ${pod} did not become ready; its last log lines (if any):`);
        const logs = run(k.logs(pod), { passStderr: io });
        await logs.exited;
        if (logs.stdout) io.err(logs.stdout.replace(/^/gm, '  | '));
      }
      throw err;
    }

    // 3. the port-forward, kept running for the session.
    if (stopSignal) throw new Stopped(stopSignal);
    let ready: (port: number) => void = () => {};
    const listening = new Promise<number>((resolve) => (ready = resolve));
    forward = run(k.portForward(pod), {
      passStderr: io,
      onStdout: (all) => {
        const m = FORWARDING.exec(all);
        if (m) ready(Number(m[1]));
      },
    });
    current = forward;
    const first = await Promise.race([
      listening.then((port) => ({ port })),
      forward.exited.then((r) => ({ exited: r })),
      stopped.then(() => ({ stopped: true })),
      delay(30_000).then(() => ({ timeout: true })),
    ]);
    if ('stopped' in first) throw new Stopped(stopSignal!);
    if ('exited' in first) throw new StepFailed(`kubectl port-forward exited with ${first.exited.code ?? first.exited.signal}`);
    if ('timeout' in first) throw new StepFailed('kubectl port-forward did not start listening within 30s');
    const port = first.port;

    // The readiness probe already saw /healthz; this proves the whole path, port-forward included.
    const health = await healthz(port, stopped);
    if (stopSignal) throw new Stopped(stopSignal);
    if (!health) throw new StepFailed(`nodetruth does not answer through the port-forward on 127.0.0.1:${port}`);

    if (o.capture) {
      // 4c. capture: the bundle through the port-forward into a local file, then clean up.
      const file = o.output ?? defaultBundleName(o.node);
      say(`capturing node ${o.node} into ${file}`);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v1/bundle`, { signal: AbortSignal.any([AbortSignal.timeout(10 * 60_000), stoppedSignal(stopped)]) });
        if (!res.ok || !res.body) throw new StepFailed(`GET /v1/bundle: ${res.status} ${(await res.text()).slice(0, 500)}`);
        // 'wx': never overwrite a file; a half-written bundle is removed
        await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), createWriteStream(file, { flags: 'wx', mode: 0o600 }));
      } catch (err) {
        if (!(err instanceof Error && 'code' in err && err.code === 'EEXIST')) await rm(file, { force: true });
        if (stopSignal) throw new Stopped(stopSignal);
        throw err instanceof StepFailed ? err : new StepFailed(`capture: ${(err as Error).message}`);
      }
      say(`wrote ${file}; read it with: nodetruth serve --bundle ${file}`);
      return (code = 0);
    }

    if (o.get.length > 0) {
      // 4b. scripted: fetch, print, clean up.
      code = 0;
      for (const path of o.get) {
        if (stopSignal) throw new Stopped(stopSignal);
        let res: Response;
        let body: string;
        try {
          res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(60_000) });
          body = await res.text();
        } catch (err) {
          throw new StepFailed(`GET ${path}: ${(err as Error).message}`);
        }
        io.out(body.endsWith('\n') ? body : `${body}\n`);
        if (!res.ok) {
          say(`GET ${path}: ${res.status}`);
          code = 1;
        }
      }
      return code;
    }

    // 4. interactive: print curl lines and hold the session until Ctrl-C or the forward ends.
    say(`${health} answering for node ${o.node} on http://127.0.0.1:${port} (pod ${pod}${o.namespace ? ` in ${o.namespace}` : ''}; it ends by itself after ${formatSeconds(o.maxDurationSeconds)}, --max-duration)`);
    io.out(`\n${curlLines(port).join('\n')}\n\n`);
    say('Ctrl-C ends the session and deletes the pod');
    const end = await Promise.race([forward.exited.then((r) => ({ exited: r })), stopped.then(() => ({ stopped: true }))]);
    if ('stopped' in end || stopSignal) {
      code = 0; // the user ended the session: that is success
      return code;
    }
    throw new StepFailed(`kubectl port-forward ended (${end.exited.code ?? end.exited.signal}); the pod may have stopped (or reached its --max-duration of ${formatSeconds(o.maxDurationSeconds)})`);
  } catch (err) {
    if (err instanceof Stopped) {
      code = err.signal === 'SIGINT' ? 130 : 143;
    } else if (err instanceof StepFailed) {
      say(err.message);
      code = 1;
    } else {
      say(`unexpected error: ${(err as Error).stack ?? String(err)}`);
      code = 1;
    }
    return code;
  } finally {
    cleaningUp = true;
    if (forward && forward.child.exitCode === null && forward.child.signalCode === null) {
      forward.child.kill('SIGTERM');
      await forward.exited;
    }
    if (pod) {
      // Detached: its own process group, so a second Ctrl-C in the terminal cannot kill it.
      say(`deleting pod ${pod}`);
      const del = run(k.delete(pod), { passStderr: io, detached: true });
      const res = await Promise.race([del.exited, delay(30_000).then(() => null)]);
      if (!res) del.child.unref();
      if (res?.code === 0) {
        if (del.stdout.trim()) io.err(`${del.stdout.trim()}\n`);
      } else {
        say(`could not delete pod ${pod}; delete it yourself: kubectl ${k.delete(pod).filter((a) => a !== '--ignore-not-found').join(' ')}`);
        code = 1;
      }
    }
    for (const s of SIGNALS) signals.off(s, onSignal);
  }
}

function formatSeconds(s: number): string {
  return s % 3600 === 0 ? `${s / 3600}h` : s % 60 === 0 ? `${s / 60}m` : `${s}s`;
}

/** An AbortSignal that fires when the session is stopped (Ctrl-C, SIGTERM). */
function stoppedSignal(stopped: Promise<void>): AbortSignal {
  const ac = new AbortController();
  void stopped.then(() => ac.abort(new Error('stopped')));
  return ac.signal;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** GET /healthz through the forward, retrying briefly; the agent's name and version, or null. */
async function healthz(port: number, stopped: Promise<void>): Promise<string | null> {
  let stop = false;
  void stopped.then(() => (stop = true));
  const deadline = Date.now() + 15_000;
  while (!stop && Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(3000) });
      if (res.ok) {
        const body = (await res.json()) as { version?: string };
        return `nodetruth ${body.version ?? '(unknown version)'}`;
      }
    } catch {
      /* not yet */
    }
    await delay(500);
  }
  return null;
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
