/**
 * Journal benchmark: a generated 1,000,000-entry journal (every third
 * entry kubelet), then in the same run:
 *   - `query=kubelet&tailLines=1000` through JournalSource vs journalctl alone (ratio)
 *   - a full kubelet unit dump through JournalSource: entries/s
 * Run: npx tsx bench/journal.ts [entries]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { HostFs } from '../src/readers/hostfs/hostfs.js';
import { JournalSource } from '../src/readers/journal/journalctl.js';
import { validateJournalQuery, type JournalQuery } from '../src/readers/journal/query.js';
import { bulkScenario, writeJournal } from '../test/fixtures/journal/gen.js';

const n = Number(process.argv[2] ?? 1_000_000);
const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-bench-journal-'));
try {
  let t0 = performance.now();
  // several files, as a real node's journal is rotated
  const files = 8;
  const per = Math.ceil(n / files);
  const all = bulkScenario(n);
  for (let f = 0; f < files; f++) {
    const chunk = (function* () {
      for (let i = 0; i < per; i++) {
        const r = all.next();
        if (r.done) return;
        yield r.value;
      }
    })();
    await writeJournal(path.join(root, 'var/log/journal'), `system@${String(f).padStart(4, '0')}`, chunk);
  }
  console.log(`generated ${n} entries in ${files} files: ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const src = new JournalSource({ hostFs: new HostFs(root), maxBytes: 4 * 1024 * 1024 * 1024, deadlineMs: 600_000 });
  const q = validateJournalQuery({ query: ['kubelet'], tailLines: 1000 }) as Extract<JournalQuery, { kind: 'journal' }>;
  const runs = 20;
  const direct: number[] = [];
  const agent: number[] = [];
  await src.query(q); // warm the page cache
  for (let i = 0; i < runs; i++) {
    t0 = performance.now();
    execFileSync('journalctl', [`--root=${root}`, '--no-pager', '-u', 'kubelet', '-n', '1000', '-o', 'export'], { maxBuffer: 1 << 30 });
    direct.push(performance.now() - t0);
    t0 = performance.now();
    const r = await src.query(q);
    agent.push(performance.now() - t0);
    if (r.records.length !== 1000) throw new Error(`got ${r.records.length}`);
  }
  const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]!;
  console.log(`tailLines=1000 kubelet: journalctl alone (-o export) p50 ${med(direct).toFixed(1)} ms; agent p50 ${med(agent).toFixed(1)} ms; ratio ${(med(agent) / med(direct)).toFixed(2)}`);

  const full = validateJournalQuery({ query: ['kubelet'] }) as Extract<JournalQuery, { kind: 'journal' }>;
  t0 = performance.now();
  const r = await src.query(full);
  const s = (performance.now() - t0) / 1000;
  console.log(`full kubelet dump: ${r.records.length} entries in ${s.toFixed(2)} s = ${Math.round(r.records.length / s)} entries/s (truncated: ${r.truncated})`);
  t0 = performance.now();
  execFileSync('journalctl', [`--root=${root}`, '--no-pager', '-u', 'kubelet', '-o', 'export'], { maxBuffer: 1 << 31 - 1 });
  console.log(`journalctl alone, same dump to a buffer (-o export, all fields): ${((performance.now() - t0) / 1000).toFixed(2)} s`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
