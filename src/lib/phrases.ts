/**
 * Literal phrases, the linear-time way to recognise tenant-caused text (kernel messages,
 * kubelet lines): no backtracking, whatever the text holds.
 */

/**
 * Do `parts` occur in `text` in this order, anything between them (what `A.*B` meant as a
 * regex)? The first occurrence of each part leaves the most room for the next: one pass.
 */
export function containsInOrder(text: string, parts: readonly string[]): boolean {
  let from = 0;
  for (const part of parts) {
    const i = text.indexOf(part, from);
    if (i < 0) return false;
    from = i + part.length;
  }
  return true;
}
