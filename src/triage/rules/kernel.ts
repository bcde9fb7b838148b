/**
 * Kernel log problems (rules/kernel-problems.ts's table): one finding per kind and
 * what it is about (the pod of the named task, the device, or the node), each with
 * the kmsg records (sequence number and text) as evidence. Records older than
 * kernelWindowMinutes count only for kinds whose state lasts (a read-only remount, an oops).
 */
import type { Evidence, Finding } from '../../model/triage.js';
import type { AttributedKernelProblem } from '../../view/kernel-problems.js';
import { TAINT_BITS } from '../../readers/node/taint.js';
import { KERNEL_PROBLEMS, type KernelProblemKind } from '../../rules/kernel-problems.js';
import { THRESHOLDS } from '../../rules/thresholds.js';
import { clip, shortId } from '../../format.js';
import { findingWindow } from '../../view/timeline/window.js';
import { idsOf, kindOf } from '../findings.js';
import { plural, type Rule, type SnapshotIndex, who } from './rule.js';

const TAINT_MEANING = new Map(TAINT_BITS.map((b) => [b.letter, b.meaning]));

/** "DL" → "D (the kernel died recently (an oops or BUG)), L (a soft lockup occurred)" */
const describeTaint = (letters: string) => [...letters].map((c) => `${c} (${TAINT_MEANING.get(c) ?? 'unknown'})`).join(', ');

function evidenceOf(p: AttributedKernelProblem): Evidence {
  const lines = [`${p.time} ${p.text}`, ...p.context.map((c) => `  [seq ${c.seq}] ${c.text}`)];
  if (p.pid !== null) lines.push(p.cgroup ? `  /proc/${p.pid}/cgroup: ${p.cgroup}` : `  pid ${p.pid}: ${p.attribution ?? 'not attributed'}`);
  return { source: 'kmsg', seq: p.seq, excerpt: clip(lines.join('\n'), 800) };
}

/** what the finding is about: a pod (the named task's cgroup), a device, a netns, or the node */
function keyOf(p: AttributedKernelProblem): string {
  if (p.podUid) return `pod/${p.podUid}/${p.containerId ?? ''}`;
  if (p.device) return `dev/${p.device}`;
  if (p.netns !== null) return `netns/${p.netns}`;
  return 'node';
}

function tasks(g: readonly AttributedKernelProblem[]): string {
  const named = [...new Set(g.filter((p) => p.pid !== null).map((p) => `${p.comm ?? '?'} (pid ${p.pid})`))];
  return named.length > 0 ? named.slice(0, 5).join(', ') + (named.length > 5 ? ` and ${named.length - 5} more` : '') : '';
}

function finding(k: KernelProblemKind, g: AttributedKernelProblem[], ix: SnapshotIndex, windowNote: string, nowMs: number): Finding {
  const last = g[g.length - 1]!;
  const subject = last.podUid ? ix.subject(last.podUid, last.containerId) : undefined;
  const where = subject ? ` in ${who(subject)}` : last.device ? ` on ${last.device}` : last.netns !== null ? ` in netns ${last.netns}` : '';
  const t = tasks(g);
  const secs = Math.max(...g.map((p) => p.seconds ?? 0));
  const taint = g.map((p) => p.taint).filter((x): x is string => x !== null && x !== '').at(-1);
  const parts = [
    `${plural(g.length, 'kernel record')}${windowNote} (${g[0]!.time} … ${last.time})`,
    t ? `tasks ${t}` : '',
    secs > 0 ? `up to ${secs} s` : '',
    taint ? `kernel tainted: ${describeTaint(taint)}` : '',
    !subject && last.pid !== null && last.attribution ? `not attributed to a pod: ${last.attribution}` : '',
    subject && last.containerId ? `container ${shortId(last.containerId)}` : '',
  ];
  const text = kindOf(k.id);
  const f: Finding = {
    id: k.id,
    severity: text.severities[0]!,
    title: `${text.title}${where}`,
    detail: parts.filter(Boolean).join('; '),
    evidence: g.slice(-THRESHOLDS.maxEvidence).map(evidenceOf),
    hint: text.todo,
    ...findingWindow(g.map((p) => p.time), nowMs),
  };
  if (subject) f.subject = subject;
  return f;
}

export const kernelRule: Rule = {
  name: 'kernel',
  ids: idsOf('kernel'),
  run(s, ix) {
    if (!s.kernel?.ok) return [];
    const cutoff = s.nowMs - THRESHOLDS.kernelWindowMinutes * 60_000;
    const out: Finding[] = [];
    for (const k of KERNEL_PROBLEMS) {
      const groups = new Map<string, AttributedKernelProblem[]>();
      for (const p of s.kernel.value.problems) {
        if (p.id !== k.id) continue;
        if (!k.lasting && !(Date.parse(p.time) >= cutoff)) continue;
        const key = keyOf(p);
        groups.set(key, [...(groups.get(key) ?? []), p]);
      }
      const note = k.lasting ? ' this boot' : ` in the last ${THRESHOLDS.kernelWindowMinutes} minutes`;
      for (const g of groups.values()) out.push(finding(k, g, ix, note, s.nowMs));
    }
    return out;
  },
};
