/**
 * Gauges without labels whose value may be unknown (no conntrack module, no taint file). prom-client
 * writes such a gauge as 0 after reset() (gauge.js resets an unlabelled gauge to 0), and 0 conntrack
 * entries of a limit of 0 or "not tainted" would be a lie: these are written as text instead, with
 * HELP and TYPE and no sample when the value is unknown, as prom-client writes a labelled family
 * with no series.
 */
import { escapeText } from '../labels.js';

interface Scalar {
  name: string;
  help: string;
  /** null (or not finite): unknown in this scrape, no sample */
  value: number | null | undefined;
}

export function scalarText(families: readonly Scalar[]): string {
  return families
    .map((f) => {
      const head = `# HELP ${f.name} ${escapeText(f.help)}\n# TYPE ${f.name} gauge`;
      return typeof f.value === 'number' && Number.isFinite(f.value) ? `${head}\n${f.name} ${f.value}` : head;
    })
    .join('\n\n');
}
