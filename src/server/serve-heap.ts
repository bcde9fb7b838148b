/**
 * The young generation of `serve`, held at two 4 MiB semi-spaces: V8 grows them with the
 * allocation rate, to 32 MiB each here, and keeps them grown. One reading of a 1,000-container
 * node takes the new space to 64-106 MiB committed, most of the agent's resident memory at its
 * peak (bench/RESULTS.md). 4 MiB, not the 2 MiB the start leaves: at 2 MiB the scavenges and
 * promotions cost ~20-40 % more CPU per answer under load, at 4 MiB the peak is much the same.
 *
 * V8 reads the semi-space bounds only at start-up, but the growth factor at every growth: the
 * growth is let run until the new space reaches 8 MiB (checked after each GC), then stopped, so
 * `nodetruth serve` is lean without a node flag. An operator's own semi-space flag on the command
 * line or in NODE_OPTIONS wins.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

const OWN_FLAG = /^--(max|min)[-_]semi[-_]space[-_]size|^--semi[-_]space[-_]growth[-_]factor/;
/** two semi-spaces of 4 MiB */
export const NEW_SPACE_BYTES = 8 * 2 ** 20;

const newSpaceBytes = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;

/** Whether the growth is bounded (false: the operator sized the young generation). */
export function holdYoungGeneration(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? '', limit = NEW_SPACE_BYTES): boolean {
  if ([...execArgv, ...nodeOptions.split(/\s+/)].some((a) => OWN_FLAG.test(a))) return false;
  const stop = () => {
    if (newSpaceBytes() < limit) return false;
    v8.setFlagsFromString('--semi-space-growth-factor=1');
    return true;
  };
  if (stop()) return true;
  const gcs = new PerformanceObserver(() => {
    if (stop()) gcs.disconnect();
  });
  gcs.observe({ entryTypes: ['gc'] });
  return true;
}
