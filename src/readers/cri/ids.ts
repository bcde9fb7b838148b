import { SourceError } from '../errors.js';

/** Container and sandbox IDs are lowercase hex, 64 characters in containerd and CRI-O. */
export const ID_PREFIX_PATTERN = /^[0-9a-f]{1,64}$/;

/** An ambiguous prefix lists at most this many candidates. */
export const MAX_CANDIDATES = 20;

/** What matches an id prefix the way containerd's truncindex resolves it: an exact id alone, else every id it starts. */
export function prefixMatches<T>(items: Iterable<T>, prefix: string, idOf: (item: T) => string): T[] {
  const matches: T[] = [];
  for (const i of items) {
    const id = idOf(i);
    if (id === prefix) return [i];
    if (id.startsWith(prefix)) matches.push(i);
  }
  return matches;
}

/** The one match, or not_found / ambiguous_id (with candidates) in the caller's words. */
export function onlyMatch<T>(
  matches: readonly T[],
  idOf: (item: T) => string,
  detail: { none: () => string; many: (n: number) => string },
): T {
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new SourceError('not_found', detail.none());
  throw new SourceError('ambiguous_id', detail.many(matches.length), { candidates: matches.slice(0, MAX_CANDIDATES).map(idOf) });
}

/**
 * Resolve an ID prefix the way containerd's truncindex does: an exact ID
 * wins, a unique prefix gives its object, several are ambiguous_id listing them.
 */
export function resolvePrefix<T extends { id: string }>(items: readonly T[], prefix: string, kind: string): T {
  const byId = (i: T) => i.id;
  return onlyMatch(prefixMatches(items, prefix, byId), byId, {
    none: () => `no ${kind} with id or id prefix ${prefix}`,
    many: (n) => `${n} ${kind}s match id prefix ${prefix}; give more characters`,
  });
}
