/**
 * kubectl as attach runs it: the argument lists of each step, and one runner that
 * spawns it with an argument array, never through a shell.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { REMOTE_PORT, type AttachOptions } from './options.js';
import { KUBECTL_DEBUG_LABEL, SESSION_ID_ENV, SESSION_LABEL } from './secret.js';

/** The kubectl argument lists the launcher runs, in order (exported for tests and --help). */
export function kubectlArgs(o: AttachOptions) {
  const global = [
    ...(o.kubeconfig ? [`--kubeconfig=${o.kubeconfig}`] : []),
    ...(o.context ? [`--context=${o.context}`] : []),
    ...(o.namespace ? [`--namespace=${o.namespace}`] : []),
  ];
  return {
    /** `custom`: the session's copy of o.profilePath, with its id and token added (secret.ts) */
    debug: (custom: string) => [...global, 'debug', `node/${o.node}`, `--image=${o.image}`, '--profile=sysadmin', `--custom=${custom}`, '--', 'nodetruth', 'serve'],
    // the deadline, and the session's label (kubectl debug cannot set one at creation)
    deadline: (pod: string, sessionId: string) => [
      ...global,
      'patch',
      `pod/${pod}`,
      '--type=merge',
      `--patch={"metadata":{"labels":{"${SESSION_LABEL}":"${sessionId}"}},"spec":{"activeDeadlineSeconds":${o.maxDurationSeconds}}}`,
    ],
    /** The debug pods of this node, as "name<TAB>session id" lines: how a pod whose name kubectl's output did not give is found. */
    findSession: () => [
      ...global,
      'get',
      'pods',
      `--selector=${KUBECTL_DEBUG_LABEL}`,
      `--field-selector=spec.nodeName=${o.node}`,
      `--output=jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.spec.containers[0].env[?(@.name=="${SESSION_ID_ENV}")].value}{"\\n"}{end}`,
      '--request-timeout=20s',
    ],
    wait: (pod: string) => [...global, 'wait', '--for=condition=Ready', `pod/${pod}`, `--timeout=${o.timeout}`],
    // any free local port: the launcher's own proxy (proxy.ts) listens on --port and adds the session's token
    portForward: (pod: string) => [...global, 'port-forward', `pod/${pod}`, `:${REMOTE_PORT}`, '--address=127.0.0.1'],
    logs: (pod: string) => [...global, 'logs', `pod/${pod}`, '--tail=20'],
    delete: (pod: string) => [...global, 'delete', 'pod', pod, '--wait=false', '--ignore-not-found'],
    /** for the user, when the launcher could not delete the pod: it carries the label once the deadline patch ran */
    deleteSession: (sessionId: string) => [...global, 'delete', 'pod', `--selector=${SESSION_LABEL}=${sessionId}`, '--wait=false'],
  };
}

export type KubectlArgs = ReturnType<typeof kubectlArgs>;

/** Where a session writes: stdout for what the user asked for, stderr for everything else. */
export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
}

export interface Proc {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const KUBECTL = 'kubectl';

export function run(args: string[], opts: { passStderr: Io | null; detached?: boolean; onStdout?: (all: string) => void }): Proc {
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

/** Whether a process has not ended yet. */
export const running = (p: Proc): boolean => p.child.exitCode === null && p.child.signalCode === null;

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
