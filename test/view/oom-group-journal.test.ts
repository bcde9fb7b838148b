/**
 * memory.oom.group kills read from the journal alone (the kmsg ring overwritten): journalctl's
 * --grep prefilter (OOM_PATTERNS.any) must let the "Tasks in <cg> are going to be killed due to
 * memory.oom.group set" record through, or a kill of another task of the group loses its
 * cgroup and is answered as a kill of no pod. Real journal files (systemd-journal-remote) of
 * the kernel records of test/fixtures/kmsg/oom-group-6.1.0-57-amd64.kmsg, plus one more
 * member's kill line of the same shape, read by the real journalctl.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { HostFs } from '../../src/readers/hostfs/hostfs.js';
import { JournalSource } from '../../src/readers/journal/journalctl.js';
import { KmsgReader } from '../../src/readers/kmsg/reader.js';
import { OomSource } from '../../src/view/oom.js';
import { BOOTS, JOURNAL_REMOTE, kernel, writeJournal } from '../fixtures/journal/gen.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';

if (!existsSync(JOURNAL_REMOTE)) {
  t.plan(0, `skipped: ${JOURNAL_REMOTE} is not installed: no real journal can be written`);
} else {
  const records = readFileSync(kmsgFixture('oom-group-6.1.0-57-amd64.kmsg'), 'utf8')
    .split('\n')
    .filter((l) => /^\d+,\d+,\d+,/.test(l))
    .map((l) => {
      const [head, ...text] = l.split(';');
      const [prio, , usec] = head!.split(',');
      return { level: Number(prio), monoUs: Number(usec), text: text.join(';') };
    });
  const last = records.at(-1)!;
  records.push({ ...last, monoUs: last.monoUs + 40, text: last.text.replace('Killed process 931 (dd)', 'Killed process 933 (sleep)') });
  t.ok(records.some((r) => r.text.startsWith('Tasks in ')), 'the fixture holds the group line');

  const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-oom-group-journal-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  await writeJournal(path.join(root, 'var/log/journal'), 'system', records.map((r) => kernel({ boot: 2, ...r })));
  mkdirSync(path.join(root, 'proc/sys/kernel/random'), { recursive: true });
  const b = BOOTS[2];
  writeFileSync(path.join(root, 'proc/sys/kernel/random/boot_id'), `${b.slice(0, 8)}-${b.slice(8, 12)}-${b.slice(12, 16)}-${b.slice(16, 20)}-${b.slice(20)}\n`);
  writeFileSync(path.join(root, 'empty.kmsg'), '');
  const fs = new HostFs(root);

  t.test('the victim once, the other member attributed to the same container', async (t) => {
    const r = await new OomSource(new KmsgReader(fs, path.join(root, 'empty.kmsg')), new JournalSource({ hostFs: fs }), fs).kills();
    t.same(
      r.kills.map((k) => [k.pid, k.evidence.source]),
      [
        [931, 'journal'],
        [933, 'journal'],
      ],
    );
    t.ok(r.kills[1]!.taskMemcg !== null && r.kills[1]!.taskMemcg === r.kills[0]!.taskMemcg, `member's cgroup: ${r.kills[1]!.taskMemcg}`);
    t.equal(r.kills[1]!.containerId, r.kills[0]!.containerId);
  });
}
