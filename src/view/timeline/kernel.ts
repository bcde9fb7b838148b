/**
 * Kernel events: OOM kills (view/oom.ts, attributed by the killed task's memcg) and the
 * kernel problems triage knows (view/kernel-problems.ts), each at wall-clock time. The ring's
 * records carry µs since boot and are timed with the timeline's clock (clock.ts); the journal's
 * kernel transport (earlier boots) carries its own wall time.
 */
import { FINDINGS } from '../../rules/findings.js';
import type { AttributedOomKill } from '../oom.js';
import type { AttributedKernelProblem } from '../kernel-problems.js';
import type { RuntimeNameBook } from '../runtime-index.js';
import { parseRfc3339Micros } from '../../readers/journal/time.js';
import type { Evidence, Severity } from '../../model/triage.js';
import { excerptText, SourceEvents, summaryText, type TimelineQuery } from './window.js';

/** Pod and container of an attributed kernel record, named by the runtime where it knows them. */
function subject(names: RuntimeNameBook, podUid: string | null, containerId: string | null) {
  if (!podUid) return {};
  const n = names.of({ podUid, containerId });
  return {
    pod: { namespace: n.podNamespace, name: n.podName, uid: podUid },
    ...(containerId ? { container: { name: n.containerName, id: containerId, attempt: null } } : {}),
  };
}

export function oomEvents(kills: readonly AttributedOomKill[], names: RuntimeNameBook, q: TimelineQuery): SourceEvents {
  const out = new SourceEvents(q);
  kills.forEach((k, i) => {
    const ev = k.evidence;
    const evidence: Evidence =
      ev.source === 'kmsg'
        ? { source: 'kmsg', ...(ev.firstSeq !== null ? { seq: ev.firstSeq } : {}), ...(ev.cursor ? { cursor: ev.cursor } : {}), excerpt: excerptText(ev.lines.join('\n')) }
        : { source: 'journal', ...(ev.cursor ? { cursor: ev.cursor } : {}), excerpt: excerptText(ev.lines.join('\n')) };
    const limit = k.memcgLimitKb !== null ? ` at its limit of ${Math.round(k.memcgLimitKb / 1024)} MiB` : '';
    out.add(k.time ? parseRfc3339Micros(k.time) : null, ev.firstSeq ?? i, () => ({
      source: 'oom',
      kind: k.global ? 'oom-kill-global' : 'oom-kill',
      severity: 'critical',
      ...subject(names, k.podUid, k.containerId),
      summary: summaryText(`${k.process} (pid ${k.pid}) killed by the OOM killer${k.global ? ': the node ran out of memory' : limit}`),
      evidence: [evidence],
    }));
  });
  return out;
}

const KINDS = new Map(FINDINGS.map((f) => [f.id, { severity: f.severities[0] as Severity, title: f.title }]));

export function kernelEvents(problems: readonly AttributedKernelProblem[], names: RuntimeNameBook, q: TimelineQuery): SourceEvents {
  const out = new SourceEvents(q);
  for (const p of problems) {
    const k = KINDS.get(p.id);
    const task = p.comm !== null ? ` (${p.comm}${p.pid !== null ? ` pid ${p.pid}` : ''})` : '';
    const evidence: Evidence[] = [{ source: 'kmsg', seq: p.seq, excerpt: excerptText(p.text) }, ...p.context.map((c) => ({ source: 'kmsg', seq: c.seq, excerpt: excerptText(c.text) }))];
    out.add(parseRfc3339Micros(p.time), p.seq, () => ({
      source: 'kernel',
      kind: p.id,
      severity: k?.severity ?? 'warning',
      ...subject(names, p.podUid, p.containerId),
      summary: summaryText(`${k?.title ?? p.id}${task}: ${p.text}`),
      evidence,
    }));
  }
  return out;
}
