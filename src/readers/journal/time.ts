/**
 * RFC3339 timestamps with sub-second precision kept to the microsecond (the
 * journal's resolution). Date.parse would round to milliseconds.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/** Microseconds since the epoch, or null when not RFC3339. */
export function parseRfc3339Micros(s: string): number | null {
  const m = RFC3339.exec(s);
  if (!m) return null;
  const [, y, mo, d, h, mi, se, frac, off] = m;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(se));
  const check = new Date(ms);
  // reject 2024-02-30 and 25:00:00, which Date.UTC would roll over
  if (check.getUTCFullYear() !== Number(y) || check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(se) > 60) return null;
  let offsetMin = 0;
  if (off !== 'Z' && off !== 'z') {
    const sign = off!.startsWith('-') ? -1 : 1;
    const oh = Number(off!.slice(1, 3));
    const om = Number(off!.slice(4, 6));
    if (oh > 23 || om > 59) return null;
    offsetMin = sign * (oh * 60 + om);
  }
  const micros = Number(((frac ?? '') + '000000').slice(0, 6));
  return (ms - offsetMin * 60_000) * 1000 + micros;
}

/** RFC3339 in UTC with exactly six fractional digits: 2026-11-29T17:42:28.926903Z */
export function formatMicros(us: number): string {
  const ms = Math.floor(us / 1000);
  const iso = new Date(ms).toISOString(); // ...T17:42:28.926Z
  const micro = String(Math.floor(us) % 1_000_000).padStart(6, '0');
  return `${iso.slice(0, 19)}.${micro}Z`;
}
