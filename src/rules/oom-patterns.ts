/**
 * The kernel's OOM-killer report lines (mm/oom_kill.c, mm/memcontrol.c; the format
 * table is shared/captures/kernel-journal/oom-format-strings.md), as the patterns
 * readers/oom/parse.ts applies. Each regex is anchored and has no two adjacent
 * unbounded groups; the lines that need more (the summary, the legacy memcg line) are
 * taken apart by hand from the literals here.
 */
export const OOM_PATTERNS = {
  invoked: /^(.*) invoked oom-killer: gfp_mask=(0x[0-9a-f]+)(?:\(([^)]*)\))?, order=(-?\d+), oom_score_adj=(-?\d+)/,
  memcgUsage: /^memory: usage (\d+)kB, limit (\d+)kB, failcnt (\d+)/,
  /** the summary line is parsed by parseOomSummary (a regex with six adjacent .*? groups took 35 s on a 4 KiB line) */
  summaryPrefix: 'oom-kill:constraint=',
  killed:
    /^(Memory cgroup out of memory|Out of memory(?: \(oom_kill_allocating_task\))?): Killed process (\d+) \((.*)\) total-vm:(\d+)kB, anon-rss:(\d+)kB, file-rss:(\d+)kB, shmem-rss:(\d+)kB(?:, UID:(\d+) pgtables:(\d+)kB oom_score_adj:(-?\d+))?/,
  /** kernels before ~5.0: `Task in <cg> killed as a result of limit of <cg>` (parseLegacyMemcg: a regex for it is quadratic) */
  legacyMemcg: { prefix: 'Task in ', separator: ' killed as a result of limit of ' },
  /** a kernel record's text is at most 1024 bytes (PRINTKRB_RECORD_MAX); longer lines are no OOM report and are not parsed */
  maxLineChars: 4096,
  /** a cheap prefilter (and journalctl --grep) for the lines above */
  any: 'invoked oom-killer|^memory: usage|^oom-kill:|Killed process|^Task in .* killed as a result|^Tasks in .* are going to be killed due to memory\\.oom\\.group set',
} as const;
