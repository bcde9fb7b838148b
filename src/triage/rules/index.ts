/**
 * The triage rules: pure functions from one snapshot to findings, each finding
 * carrying the evidence it came from (file path and content, CRI call, journal
 * cursor, kmsg sequence number) and the next step to take. Numbers and
 * patterns live in src/rules/; the findings each rule may emit in rules/findings.ts.
 */
import type { Finding } from '../../model/triage.js';
import type { TriageSnapshot } from '../snapshot.js';
import { crashLoopRule, stuckCreatedRule } from './containers.js';
import { journalRule } from './journal.js';
import { kernelRule } from './kernel.js';
import { kubeletRule } from './kubelet.js';
import { memoryRule } from './memory.js';
import { nodeRule } from './node.js';
import { nodeFactsRule } from './node-facts.js';
import { oomRule } from './oom.js';
import { type Rule, SnapshotIndex } from './rule.js';
import { runtimeRule } from './runtime.js';
import { sandboxRule } from './sandboxes.js';
import { sourcesRule } from './sources.js';
import { throttlingRule } from './throttling.js';

export { type Rule, SnapshotIndex } from './rule.js';

/** The rule table, in report order (findings of one severity keep this order). */
export const RULES: readonly Rule[] = [
  runtimeRule,
  kubeletRule,
  journalRule,
  oomRule,
  kernelRule,
  crashLoopRule,
  sandboxRule,
  stuckCreatedRule,
  throttlingRule,
  memoryRule,
  nodeRule,
  nodeFactsRule,
  sourcesRule,
];

export function runRules(s: TriageSnapshot, rules: readonly Rule[] = RULES): Finding[] {
  const ix = new SnapshotIndex(s);
  return rules.flatMap((r) => r.run(s, ix));
}
