/**
 * What no client may do: end the agent. Once `serve` listens, an error that escaped every
 * handler (an 'error' event nobody listens to, a rejected promise nobody awaits) is logged
 * and counted (nodetruth_uncaught_errors_total{kind}) and the agent goes on serving: such an
 * error belongs to one request or stream, and exiting would end every other one, and
 * /metrics and the probes with them (a DaemonSet pod in CrashLoopBackOff). Before it
 * listens, an error is a start-up failure and exits non-zero as usual.
 *
 * Connections the agent cut because their client took no bytes for --drain-timeout are
 * counted here too (nodetruth_stalled_clients_total{action="cut"}), and requests refused
 * for the bytes their client or every client had not read (action="refused").
 */
export type UncaughtKind = 'uncaughtException' | 'unhandledRejection';

export const guardCounts = {
  uncaught: { uncaughtException: 0, unhandledRejection: 0 } as Record<UncaughtKind, number>,
  /** sockets destroyed by the drain timeout */
  drainCuts: 0,
  /** requests refused for bytes in flight */
  inFlightRefusals: 0,
};

interface Log {
  error(obj: object, msg: string): void;
}

/** At most this many of each kind are logged in full per minute; all are counted. */
const LOGGED_PER_MINUTE = 20;

/** Install the guard; returns its removal (tests). */
export function installProcessGuard(log: Log): () => void {
  let window = 0;
  let logged = 0;
  const seen = (kind: UncaughtKind, err: unknown) => {
    guardCounts.uncaught[kind]++;
    const now = Date.now();
    if (now - window > 60_000) {
      window = now;
      logged = 0;
    }
    if (++logged > LOGGED_PER_MINUTE) return;
    const e = err instanceof Error ? err : new Error(String(err));
    log.error({ err: e, kind, total: guardCounts.uncaught[kind] }, `${kind}: an error escaped its handler; the agent goes on (nodetruth_uncaught_errors_total)`);
  };
  const onException = (err: unknown) => seen('uncaughtException', err);
  const onRejection = (err: unknown) => seen('unhandledRejection', err);
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
  };
}
