/**
 * The recent latency of the CRI list calls kubelet's PLEG depends on: kubelet relists
 * (ListPodSandbox, ListContainers) every second and reports PLEG unhealthy when a
 * relist has not completed for 3 minutes. The agent makes the same calls; their time
 * here is what the runtime gives any client now. Every call the agent's CRI client
 * makes is observed (the same observer feeds nodetruth_cri_call_duration_seconds);
 * a bounded ring per method keeps the last calls of the window.
 */
import type { CriLatency, CriMethodLatency } from '../../model/node.js';

const CRI_LATENCY_WINDOW = {
  seconds: 300,
  /** calls kept per method */
  calls: 256,
} as const;

/** kubelet's PLEG: relist period and the time after which it reports itself unhealthy */
export const PLEG = { relistSeconds: 1, unhealthySeconds: 180 } as const;

const METHODS = ['ListPodSandbox', 'ListContainers'] as const;
type Method = (typeof METHODS)[number];

interface Call {
  at: number;
  seconds: number;
  code: string;
}

export class CriLatencyTracker {
  private readonly rings = new Map<Method, Call[]>(METHODS.map((m) => [m, []]));

  constructor(
    private readonly windowSeconds: number = CRI_LATENCY_WINDOW.seconds,
    private readonly maxCalls: number = CRI_LATENCY_WINDOW.calls,
  ) {}

  /** a CallObserver: (method, gRPC code, seconds) */
  readonly observe = (method: string, code: string, seconds: number, at = Date.now()): void => {
    const ring = this.rings.get(method as Method);
    if (!ring) return;
    ring.push({ at, seconds, code });
    if (ring.length > this.maxCalls) ring.splice(0, ring.length - this.maxCalls);
  };

  snapshot(now = Date.now()): CriLatency {
    const from = now - this.windowSeconds * 1000;
    return {
      windowSeconds: this.windowSeconds,
      methods: METHODS.map((method): CriMethodLatency => {
        const calls = this.rings.get(method)!.filter((c) => c.at >= from);
        const last = calls[calls.length - 1];
        const sorted = calls.map((c) => c.seconds).sort((a, b) => a - b);
        const r = (x: number | undefined) => (x === undefined ? null : Math.round(x * 1e6) / 1e6);
        return {
          method,
          calls: calls.length,
          errors: calls.filter((c) => c.code !== 'OK').length,
          lastSeconds: r(last?.seconds),
          lastAt: last ? new Date(last.at).toISOString() : null,
          lastCode: last?.code ?? null,
          maxSeconds: r(sorted[sorted.length - 1]),
          p50Seconds: r(sorted[Math.floor((sorted.length - 1) / 2)]),
        };
      }),
    };
  }
}

const trackers = new WeakMap<object, CriLatencyTracker>();

/** The one tracker of a CRI client, attached to its calls on first use (sources.ts attaches it when the client is built). */
export function criLatencyOf(cri: { onCall(o: (method: string, code: string, seconds: number) => void): void } | null): CriLatencyTracker | null {
  if (!cri) return null;
  let t = trackers.get(cri);
  if (!t) {
    t = new CriLatencyTracker();
    trackers.set(cri, t);
    cri.onCall(t.observe);
  }
  return t;
}
