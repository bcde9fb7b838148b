/**
 * Label sets of the series and the text format's escaping. cAdvisor's container
 * labels for a cgroup, plus pod_uid, which stays set when the runtime (and with it
 * every name) is unreachable. Pod cgroups have container="" (as cAdvisor does), a
 * pod's sandbox (pause) container is container="POD", `id` is the cgroup path.
 */
import type { CgroupRecord } from '../model/cgroup.js';
import type { Container, PodSandbox } from '../model/runtime.js';
import { podOf, RuntimeNameBook } from '../view/runtime-index.js';

/** prom-client's escaping (registry.js escapeString / escapeLabelValue): the rendered text stays byte-identical to it. */
export const escapeText = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
// most values need no escaping: one test instead of three replaces, six values per cgroup
const SPECIAL = /[\\\n"]/;
export const escapeLabel = (s: string): string => (SPECIAL.test(s) ? escapeText(s).replace(/"/g, '\\"') : s);

/** One cgroup's series: its record and its label text (namespace, pod, container, id, image, pod_uid), built once for every family. */
export interface CgroupSeries {
  rec: CgroupRecord;
  labels: string;
}

interface CgroupSeriesSet {
  series: CgroupSeries[];
  /** cgroups past the cap */
  dropped: number;
}

/** The records come unnamed (scrape.ts reads them while the runtime lists): the names are joined here, as readRecords would. */
const containerLabelText = (rec: CgroupRecord, book: RuntimeNameBook | null): string => {
  const names = (book ?? RuntimeNameBook.EMPTY).of(rec);
  const image = rec.containerId ? (book?.id(rec.containerId)?.image ?? '') : '';
  const container = rec.kind === 'pod' ? '' : names.sandbox ? 'POD' : (names.containerName ?? '');
  return (
    `namespace="${escapeLabel(names.podNamespace ?? '')}",pod="${escapeLabel(names.podName ?? '')}",container="${escapeLabel(container)}",` +
    `id="${escapeLabel(rec.path)}",image="${escapeLabel(image)}",pod_uid="${escapeLabel(rec.podUid)}"`
  );
};

/** localeCompare's order (the series order dashboards and the cap have always seen), without its per-call set-up */
const byPath = new Intl.Collator().compare;

/** cgroups → series, capped at `max`: pods first, then containers in path order. */
function buildSeries(records: readonly CgroupRecord[], index: RuntimeNameBook | null, max: number): CgroupSeriesSet {
  const pods = records.filter((r) => r.kind === 'pod');
  const containers = records.filter((r) => r.kind === 'container').sort((a, b) => byPath(a.path, b.path));
  const kept = pods.concat(containers).slice(0, max);
  return { series: kept.map((rec) => ({ rec, labels: containerLabelText(rec, index) })), dropped: records.length - kept.length };
}

/**
 * The series of one scrape's records. The renderer and the dropped-cgroups gauge both ask
 * for them: they are built (and the paths sorted) once per scrape, keyed on its records.
 */
const memo = new WeakMap<readonly CgroupRecord[], { index: RuntimeNameBook | null; max: number; out: CgroupSeriesSet }>();
export function cgroupSeries(records: readonly CgroupRecord[], index: RuntimeNameBook | null, max: number): CgroupSeriesSet {
  const hit = memo.get(records);
  if (hit && hit.index === index && hit.max === max) return hit.out;
  const out = buildSeries(records, index, max);
  memo.set(records, { index, max, out });
  return out;
}

/**
 * A pod's namespace, name and UID: from its sandbox when the runtime lists it, else from the
 * io.kubernetes.pod.* labels the kubelet puts on each container; "" when neither says.
 */
export function podLabels(pod: PodSandbox | undefined, c: Container | undefined): { namespace: string; pod: string; pod_uid: string } {
  const p = podOf(c, pod);
  return { namespace: p.podNamespace ?? '', pod: p.podName ?? '', pod_uid: p.podUid ?? '' };
}
