import { type CgroupMemoryEvents, readMemoryEventsOfKubepods } from '../readers/oom/memory-events.js';
import type { QosClass } from '../model/cgroup.js';
import { parseKubepodsPath } from '../readers/cgroup/kubepods-path.js';
import type { HostFs } from '../readers/hostfs/hostfs.js';
import type { JournalSource } from '../readers/journal/journalctl.js';
import { journalQuery } from '../readers/journal/query.js';
import { formatMicros } from '../readers/journal/time.js';
import type { KmsgReader, KmsgRing } from '../readers/kmsg/reader.js';
import { bootWallUs, readBootId } from '../readers/kmsg/reader.js';
import { parseOomReports, type KernelLine, type OomKill } from '../readers/oom/parse.js';
import { OOM_PATTERNS } from '../rules/oom-patterns.js';

export interface AttributedOomKill extends OomKill {
  /** from task_memcg: the pod and container the killed process lived in (null: not a pod) */
  podUid: string | null;
  qos: QosClass | null;
  containerId: string | null;
  cgroupDriver: 'systemd' | 'cgroupfs' | null;
}

interface OomResult {
  kills: AttributedOomKill[];
  /** where the kills were read from, and what failed */
  sources: { kmsg: boolean; journal: boolean };
  warnings: string[];
}

export function attribute(k: OomKill): AttributedOomKill {
  const p = k.taskMemcg ? parseKubepodsPath(k.taskMemcg) : null;
  return { ...k, podUid: p?.podUid ?? null, qos: p?.qos ?? null, containerId: p?.containerId ?? null, cgroupDriver: p?.driver ?? null };
}

/**
 * OOM kills from the kernel log: /dev/kmsg (this boot, what the ring holds,
 * with sequence numbers) and the journal's kernel transport (every boot the
 * journal keeps). A kill seen in both is reported once, with both references.
 */
export class OomSource {
  constructor(
    private readonly kmsg: KmsgReader,
    private readonly journal: JournalSource | null,
    private readonly hostFs: HostFs,
    private readonly bootUs: () => number = bootWallUs,
  ) {}

  /** `ring`: a read of the kernel ring shared with other readers of the same moment (kmsg/reader.ts readOnce); else this source reads it */
  async kills(signal?: AbortSignal, ring: KmsgRing = this.kmsg): Promise<OomResult> {
    const warnings: string[] = [];
    const bootId = await readBootId(this.hostFs);
    const [fromKmsg, fromJournal] = await Promise.all([
      this.fromKmsg(ring, bootId, signal).catch((err: Error) => {
        warnings.push(`kmsg: ${err.message}`);
        return null;
      }),
      this.journal
        ? this.fromJournal(signal).catch((err: Error) => {
            warnings.push(`journal: ${err.message}`);
            return null;
          })
        : Promise.resolve(null),
    ]);
    const kills: OomKill[] = [...(fromKmsg ?? [])];
    for (const j of fromJournal?.kills ?? []) {
      const same = kills.find((k) => k.evidence.source === 'kmsg' && k.bootId === j.bootId && k.pid === j.pid && k.monotonicUs === j.monotonicUs);
      if (same) same.evidence.cursor = j.evidence.cursor;
      else kills.push(j);
    }
    warnings.push(...(fromJournal?.warnings ?? []));
    kills.sort((a, b) => (a.time ?? '').localeCompare(b.time ?? ''));
    return { kills: kills.map(attribute), sources: { kmsg: fromKmsg !== null, journal: fromJournal !== null }, warnings };
  }

  private async fromKmsg(ring: KmsgRing, bootId: string | null, signal?: AbortSignal): Promise<OomKill[]> {
    const boot = this.bootUs();
    const lines: KernelLine[] = [];
    for (const it of await ring.readAll(signal)) {
      if (it.kind !== 'record') continue;
      const r = it.record;
      // Only the kernel writes facility 0: the kernel forces LOG_USER (1) or the writer's own
      // facility on every record written to /dev/kmsg from userspace, so a forged OOM report
      // naming another pod cannot pass for the kernel's.
      if (r.facility !== 0) continue;
      lines.push({ text: r.text, monotonicUs: r.tsUsec, time: formatMicros(boot + r.tsUsec), bootId, seq: r.seq, cursor: null });
    }
    return parseOomReports(lines, 'kmsg');
  }

  private async fromJournal(signal?: AbortSignal): Promise<{ kills: OomKill[]; warnings: string[] }> {
    const res = await this.journal!.query(
      journalQuery({
        tailLines: 20_000,
        pattern: OOM_PATTERNS.any,
        // journald keeps the kmsg facility: a record injected from userspace is not SYSLOG_FACILITY=0
        matches: ['_TRANSPORT=kernel', 'SYSLOG_FACILITY=0'],
      }),
      signal,
    );
    const lines: KernelLine[] = res.records.map((r) => ({
      text: r.message,
      monotonicUs: r.monotonicUs,
      time: r.time,
      bootId: r.bootId,
      seq: null,
      cursor: r.cursor,
    }));
    return { kills: parseOomReports(lines, 'journal'), warnings: res.warnings };
  }

  /**
   * memory.events of every live pod and container cgroup (hierarchical: a pod's survives
   * its containers). A cgroup that cannot be listed or read is skipped and named in `warnings`.
   */
  memoryEvents(warnings: string[] = []): Promise<CgroupMemoryEvents[]> {
    return readMemoryEventsOfKubepods(this.hostFs, warnings);
  }
}
