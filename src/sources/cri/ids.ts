import { ambiguous, notFound } from '../../errors.js';

/** Container and sandbox IDs are lowercase hex, 64 characters in containerd and CRI-O. */
export const ID_PREFIX_PATTERN = /^[0-9a-f]{1,64}$/;

const MAX_CANDIDATES = 20;

/**
 * Resolve an ID prefix the way containerd's truncindex does: an exact ID
 * wins, a unique prefix gives its object, several give 409 listing them.
 */
export function resolvePrefix<T extends { id: string }>(items: readonly T[], prefix: string, kind: string): T {
  const exact = items.find((i) => i.id === prefix);
  if (exact) return exact;
  const matches = items.filter((i) => i.id.startsWith(prefix));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw notFound(`no ${kind} with id or id prefix ${prefix}`);
  const candidates = matches.slice(0, MAX_CANDIDATES).map((m) => m.id);
  throw ambiguous(`${matches.length} ${kind}s match id prefix ${prefix}; give more characters`, candidates);
}
