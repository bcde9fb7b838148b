/**
 * kubectl as attach runs it: the argument lists of each step, and one runner that
 * spawns it with an argument array, never through a shell.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { REMOTE_PORT, type AttachOptions } from './options.js';

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
