/**
 * The one cgroup source every route, the metrics and triage read through: the mode
 * (v2 required; v1 or hybrid is cgroup_mode_unsupported with the reason), and the
 * pipeline "walk the kubepods cgroups, read their files, join the runtime's names
 * within the runtime's deadline" written once. The walk, the reads and the runtime's
 * lists are made once per reading (src/reading.ts) and let go with it (the runtime's
 * names excepted: view/runtime-index.ts).
 */
import type { CgroupMode, CgroupRecord, CgroupStats } from '../model/cgroup.js';
import { SingleFlight } from '../lib/concurrency.js';
import { type RuntimeIndexSource, type RuntimeJoin, RuntimeNameBook } from './runtime-index.js';
import type { HostFs } from '../readers/hostfs/hostfs.js';
import { type FoundCgroup, walkKubepods } from '../readers/cgroup/cgroups.js';
import { readMany, type StatFile } from '../readers/cgroup/stats.js';
import { measureThrottling, type ThrottlingReport } from '../readers/cgroup/throttling.js';
import { matchCgroupId, requireV2, type CgroupMatch } from './cgroup-lookup.js';

interface FoundCgroups {
  mode: CgroupMode;
  found: FoundCgroup[];
  /** the runtime's names (NOT_ASKED when the caller asked for none) */
  join: RuntimeJoin;
  /** what was skipped (a cgroup that cannot be listed); the caller's own copy */
  warnings: string[];
}

interface CgroupRecords extends Omit<FoundCgroups, 'found'> {
  items: CgroupRecord[];
}

interface CgroupQuery {
  /** one pod's cgroups (its own and its containers') */
  podUid?: string;
  /** join the runtime's names (default true); false: names are null, nothing waits for the runtime */
  names?: boolean;
  /** read only these files (the metrics read half of them); default every one */
  only?: readonly StatFile[];
}

/** The join of a caller that asked for no names: nothing waited for the runtime. */
const NOT_ASKED: RuntimeJoin = { joined: false, index: null, names: RuntimeNameBook.EMPTY, detail: 'names not asked for' };

const strip = <C extends FoundCgroup>(c: C) => {
  const { dir: _dir, ...rest } = c;
  return rest;
};

export class CgroupSource {
  private readonly flights = new SingleFlight();

  constructor(
    readonly fs: HostFs,
    readonly runtime: RuntimeIndexSource,
  ) {}

  /** The mode, or cgroup_mode_unsupported naming what was found instead of cgroup v2. */
  requireV2(): Promise<CgroupMode> {
    return this.flights.do('v2', () => requireV2(this.fs));
  }

  /** The kubepods cgroups (v2 required) and, unless `names: false`, the runtime's names joined within its deadline. */
  async found(q: Pick<CgroupQuery, 'podUid' | 'names'> = {}): Promise<FoundCgroups> {
    const [mode, walked, join] = await Promise.all([this.requireV2(), this.walk(q.podUid), q.names === false ? NOT_ASKED : this.runtime.join()]);
    return { mode, found: walked.found, join, warnings: [...walked.warnings] };
  }

  /** Every kubepods cgroup (or one pod's) read, named from the runtime when it answers within its deadline. */
  async records(q: CgroupQuery = {}): Promise<CgroupRecords> {
    const key = JSON.stringify([q.podUid ?? null, q.names !== false, q.only ?? null]);
    const r = await this.flights.do(`records:${key}`, async () => {
      // the files are read while the runtime lists: neither waits for the other
      const [mode, read, join] = await Promise.all([this.requireV2(), this.readFound(q.podUid, q.only), q.names === false ? NOT_ASKED : this.runtime.join()]);
      return { mode, join, items: this.named(read.items, join.names), warnings: read.warnings };
    });
    return { ...r, warnings: [...r.warnings] };
  }

  /** `cgroups` (some of a walk) read and named; what cannot be read is skipped and named in `warnings`. */
  async read(cgroups: readonly FoundCgroup[], names: RuntimeNameBook, warnings: string[], only?: readonly StatFile[]): Promise<CgroupRecord[]> {
    return this.named(await readMany(this.fs, cgroups, undefined, only, warnings), names);
  }

  /** A pod UID or a container ID (prefix) among the kubepods cgroups: not_found, ambiguous_id otherwise. */
  async match(id: string, q: { names?: boolean; containersOnly?: boolean } = {}): Promise<FoundCgroups & CgroupMatch> {
    const f = await this.found({ names: q.names !== false });
    const among = q.containersOnly ? f.found.filter((c) => c.kind === 'container') : f.found;
    return { ...f, ...matchCgroupId(among, id, f.join) };
  }

  /** CPU throttling measured over `windowMs`, with the runtime's names when asked (joined while the window runs). */
  async throttling(
    windowMs: number,
    opts: { podUid?: string; signal?: AbortSignal; names?: boolean },
  ): Promise<{ report: ThrottlingReport; join: RuntimeJoin; warnings: string[] }> {
    await this.requireV2();
    const warnings: string[] = [];
    const [report, join] = await Promise.all([
      measureThrottling(this.fs, windowMs, { ...(opts.podUid ? { podUid: opts.podUid } : {}), ...(opts.signal ? { signal: opts.signal } : {}), warnings }),
      opts.names === false ? NOT_ASKED : this.runtime.join(),
    ]);
    return { report, join, warnings };
  }

  private walk(podUid: string | undefined): Promise<{ found: FoundCgroup[]; warnings: string[] }> {
    return this.flights.do(`walk:${podUid ?? ''}`, async () => {
      const warnings: string[] = [];
      const found = await walkKubepods(this.fs, podUid === undefined ? { warnings } : { podUid, warnings });
      return { found, warnings };
    });
  }

  private async readFound(podUid: string | undefined, only: readonly StatFile[] | undefined) {
    const walked = await this.walk(podUid);
    const warnings = [...walked.warnings];
    const items = await readMany(this.fs, walked.found, undefined, only, warnings);
    return { items, warnings };
  }

  private named(read: readonly (FoundCgroup & { stats: CgroupStats })[], names: RuntimeNameBook): CgroupRecord[] {
    return read.map(({ stats, ...c }) => ({ ...strip(c), ...names.of(c), ...stats }));
  }
}