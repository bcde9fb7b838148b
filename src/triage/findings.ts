/** The findings catalogue (rules/findings.ts) as the rules read it. */
import { FINDINGS, type FindingKind, type RuleName } from '../rules/findings.js';

export { FINDINGS, type FindingKind, type RuleName };

/** The ids a rule may emit, in catalogue order. */
export const idsOf = (rule: RuleName): string[] => FINDINGS.filter((f) => f.rule === rule).map((f) => f.id);

/** A catalogued finding by id; throws on an id the catalogue does not hold (a rule's bug). */
export function kindOf(id: string): FindingKind {
  const k = FINDINGS.find((f) => f.id === id);
  if (!k) throw new Error(`finding ${id} is not in the catalogue`);
  return k;
}
