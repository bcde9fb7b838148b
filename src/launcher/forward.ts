/**
 * 3. kubectl port-forward to the pod, kept running for the session, and a check
 * through it that nodetruth answers.
 */
import { delay, run, type KubectlArgs, type Proc } from './kubectl.js';
import { Stopped, StepFailed, type Session } from './session.js';

/** What client-go's port forwarder prints once it listens (tools/portforward). */
const FORWARDING = /^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)$/m;

/** Start the forward and wait until it listens; its local port. The process is kept by the session (ended by signals and at the end). */
export async function portForward(s: Session, k: KubectlArgs, pod: string): Promise<{ forward: Proc; port: number }> {
  s.checkStopped();
  let ready: (port: number) => void = () => {};
  const listening = new Promise<number>((resolve) => (ready = resolve));
  const forward = s.keep(
    run(k.portForward(pod), {
      passStderr: s.io,
      onStdout: (all) => {
        const m = FORWARDING.exec(all);
        if (m) ready(Number(m[1]));
      },
    }),
  );
  const first = await Promise.race([
    listening.then((port) => ({ port })),
    forward.exited.then((r) => ({ exited: r })),
    s.stopped.then(() => ({ stopped: true })),
    delay(30_000).then(() => ({ timeout: true })),
  ]);
  if ('stopped' in first) throw new Stopped(s.stopSignal!);
  if ('exited' in first) throw new StepFailed(`kubectl port-forward exited with ${first.exited.code ?? first.exited.signal}`);
  if ('timeout' in first) throw new StepFailed('kubectl port-forward did not start listening within 30s');
  return { forward, port: first.port };
}

/** The readiness probe already saw /healthz; this proves the whole path, port-forward included. The agent's name and version. */
export async function checkThrough(s: Session, port: number): Promise<string> {
  const health = await healthz(port, s.stopped);
  s.checkStopped();
  if (!health) throw new StepFailed(`nodetruth does not answer through the port-forward on 127.0.0.1:${port}`);
  return health;
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
