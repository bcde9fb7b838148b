/**
 * One attach session's state: the signals that end it, the kubectl step running
 * now (ended by a signal), and the debug pod's name once known (deleted on every
 * way out). The steps (pod.ts, forward.ts, modes.ts) run through it.
 */
import { run, running, type Io, type Proc } from './kubectl.js';
import { newSessionSecret, type SessionSecret } from './secret.js';

/** A signal ended the session: exit 130 (SIGINT) or 143. */
export class Stopped extends Error {
  constructor(readonly signal: NodeJS.Signals) {
    super(`stopped by ${signal}`);
  }
}

/** A step failed: its message is printed and the exit code is 1. */
export class StepFailed extends Error {
  constructor(
    message: string,
    readonly stderr = '',
  ) {
    super(message);
  }
}

const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export class Session {
  /** the debug pod, once kubectl debug printed its name (or it was found by the session's id) */
  pod: string | null = null;
  /** this session's id and token (secret.ts): the token only ever leaves in the pod spec and the proxy's requests */
  readonly secret: SessionSecret = newSessionSecret();
  stopSignal: NodeJS.Signals | null = null;
  /** resolves when a signal ends the session */
  readonly stopped: Promise<void>;
  private wake: (() => void) | null = null;
  private current: Proc | null = null;
  private cleaningUp = false;

  constructor(
    readonly io: Io,
    private readonly signals: NodeJS.EventEmitter,
  ) {
    this.stopped = new Promise<void>((resolve) => (this.wake = resolve));
    for (const s of SIGNALS) signals.on(s, this.onSignal);
  }

  say(s: string): void {
    this.io.err(`nodetruth attach: ${s}\n`);
  }

  private readonly onSignal = (sig: NodeJS.Signals) => {
    if (this.stopSignal) {
      if (this.cleaningUp) this.say(`${sig} again: still deleting pod ${this.pod ?? ''}, one moment`);
      return;
    }
    this.stopSignal = sig;
    this.say(`${sig}: ending the session`);
    // A Ctrl-C in a terminal reaches kubectl too (same process group); SIGTERM sent to
    // us alone does not, so end the running step ourselves either way.
    if (this.current && running(this.current)) this.current.child.kill('SIGTERM');
    this.wake?.();
  };

  /** Throws Stopped once a signal came. */
  checkStopped(): void {
    if (this.stopSignal) throw new Stopped(this.stopSignal);
  }

  /** Run one kubectl step to its end; throws Stopped if a signal came first. */
  async step(args: string[], onStdout?: (all: string) => void): Promise<Proc> {
    this.checkStopped();
    const p = run(args, { passStderr: this.io, ...(onStdout ? { onStdout } : {}) });
    this.current = p;
    const res = await p.exited;
    this.current = null;
    this.checkStopped();
    if (res.code !== 0) throw new StepFailed(`kubectl ${args.find((a) => !a.startsWith('--')) ?? ''} exited with ${res.code ?? res.signal}`, p.stderr);
    return p;
  }

  /** A kubectl kept running for the session (the port-forward): a signal ends it, and so does endKept. */
  keep(p: Proc): Proc {
    this.current = p;
    return p;
  }

  /** The session's end: the kept process is ended; a second signal only says what is going on. */
  async endKept(): Promise<void> {
    this.cleaningUp = true;
    const p = this.current;
    if (p && running(p)) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  }

  close(): void {
    for (const s of SIGNALS) this.signals.off(s, this.onSignal);
  }

  /** An AbortSignal that fires when the session is stopped (Ctrl-C, SIGTERM). */
  abortSignal(): AbortSignal {
    const ac = new AbortController();
    void this.stopped.then(() => ac.abort(new Error('stopped')));
    return ac.signal;
  }
}
