/**
 * What each kubepods cgroup's interface files say: the files read for each, their
 * synchronous read and parse, and the loop over many cgroups that yields between slices.
 *
 * Inside a reading (DESIGN.md "One reading of the node") each cgroup's files are read at
 * most once: what one answer read (a scrape's few files, every file for /v1/cgroups, one
 * pod's) is kept for the reading, and a later answer reads only the files not read yet.
 */
import type { CgroupStats, IoDeviceStat, PidsStats, Pressure } from '../../model/cgroup.js';
import type { HostFs, ResolvedDir } from '../hostfs/hostfs.js';
import { memoScope } from '../../lib/concurrency.js';
import { nextTurn, Slice } from '../../lib/turns.js';
import { scanFilesInSync } from '../hostfs/read-sync.js';
import { cpuMaxAt, cpuStatInto, emptyCpu, emptyMemory, ioStatAt, limitAt, memoryEventsAt, memoryStatInto, psiAt, singleAt, workingSet } from './parse.js';
import type { FoundCgroup } from './cgroups.js';

const errText = (err: unknown) => (err as NodeJS.ErrnoException).code ?? (err as Error).message;

/** The interface files read for each cgroup, in one place. */
const FILES = [
  'memory.current',
  'memory.max',
  'memory.peak',
  'memory.swap.current',
  'memory.swap.max',
  'memory.events',
  'memory.events.local',
  'memory.stat',
  'cpu.stat',
  'cpu.max',
  'cpu.weight',
  'pids.current',
  'pids.max',
  'io.stat',
  'cpu.pressure',
  'memory.pressure',
  'io.pressure',
  // last, so the indexes above keep their numbers
  'memory.high',
] as const;
export const STAT_FILES: readonly string[] = FILES;
export type StatFile = (typeof FILES)[number];

const FILE_ID = new Map<string, number>(FILES.map((f, i) => [f, i]));
/** For each list of files a caller reads, their index in FILES (worked out once per list). */
const fileIds = new WeakMap<readonly StatFile[], Uint8Array>();
const idsOf = (only: readonly StatFile[]) => {
  let ids = fileIds.get(only);
  if (!ids) fileIds.set(only, (ids = Uint8Array.from(only, (f) => FILE_ID.get(f)!)));
  return ids;
};

/** The largest file read: io.stat of a node with many devices; anything longer is cut (and its last line refused). */
const MAX_FILE_BYTES = 64 * 1024;

/**
 * Read and parse one cgroup's files. Missing files give nulls; null overall
 * when the cgroup itself is gone (cpu.stat exists in every v2 cgroup, whether
 * or not the cpu controller is enabled). Synchronous reads (scanFilesInSync):
 * cgroupfs never waits on a disk, and one cgroup is a small batch. Each file is
 * parsed in the read buffer as it is (no string per file, line or key), and only
 * the keys a record holds are kept. `base`: the record of the same cgroup's other
 * files, read already (a copy is completed: `base` is left as it is).
 */
function readCgroupStatsSync(dir: ResolvedDir, only: readonly StatFile[] = FILES, onMalformed?: (file: string) => void, base?: CgroupStats): CgroupStats | null {
  // `only`: a caller that needs a few fields (a /metrics scrape) reads only their files;
  // the others parse as absent (null). On a 1,000-container node every file is ~20 µs.
  const ids = idsOf(only);
  const memory = base ? { ...base.memory } : emptyMemory();
  const cpu = base ? { ...base.cpu } : emptyCpu();
  const pids: PidsStats = base ? { ...base.pids } : { current: null, max: null };
  const pressure: Pressure = base ? { ...base.pressure } : { cpu: null, memory: null, io: null };
  let io: IoDeviceStat[] | null = base ? base.io : null;
  // a base record was read from a cgroup that existed
  let sawCpuStat = base !== undefined;
  let id = 0;
  // one closure a cgroup, not one a file: it names the file being parsed
  const bad = onMalformed && (() => onMalformed(FILES[id]!));
  const there = scanFilesInSync(dir, only, MAX_FILE_BYTES, (i, b, len) => {
    id = ids[i]!;
    switch (id) {
      case 0: memory.current = singleAt(b, 0, len, bad); break;
      case 1: memory.max = limitAt(b, 0, len, bad); break;
      case 2: memory.peak = singleAt(b, 0, len, bad); break;
      case 3: memory.swapCurrent = singleAt(b, 0, len, bad); break;
      case 4: memory.swapMax = limitAt(b, 0, len, bad); break;
      case 5: memory.events = memoryEventsAt(b, 0, len, bad); break;
      case 6: memory.eventsLocal = memoryEventsAt(b, 0, len, bad); break;
      case 7: memoryStatInto(memory, b, 0, len, bad); break;
      case 8: sawCpuStat = true; cpuStatInto(cpu, b, 0, len, bad); break;
      case 9: cpu.max = cpuMaxAt(b, 0, len, bad); break;
      case 10: cpu.weight = singleAt(b, 0, len, bad); break;
      case 11: pids.current = singleAt(b, 0, len, bad); break;
      case 12: pids.max = limitAt(b, 0, len, bad); break;
      case 13: io = ioStatAt(b, 0, len, bad); break;
      case 14: pressure.cpu = psiAt(b, 0, len, bad); break;
      case 15: pressure.memory = psiAt(b, 0, len, bad); break;
      case 16: pressure.io = psiAt(b, 0, len, bad); break;
      case 17: memory.high = limitAt(b, 0, len, bad); break;
    }
  });
  if (!there) return null;
  if (!sawCpuStat) {
    let controllers = false;
    scanFilesInSync(dir, CONTROLLERS, 4096, () => (controllers = true));
    if (!controllers) return null;
  }
  memory.workingSet = workingSet(memory.current, memory.inactiveFile);
  return { memory, cpu, pids, io, pressure };
}
const CONTROLLERS = ['cgroup.controllers'];

/**
 * Cgroups read between two yields to the event loop, at most: 64 take ~10 ms on a loaded
 * 2-core machine (1,450 of them ~250 ms). Fewer when they take longer than READ_SLICE_MS
 * (a slow kernel, files full of junk: up to 17 x 64 KiB each), the clock read every 4.
 * Not lib/turns' 8 ms queue: measured under 50 connections (bench/RESULTS.md, "the event
 * loop at 3,000 containers"), slices that small behind one queue leave the reads of
 * /v1/cgroups behind the renders that yield with a plain setImmediate, and the load shedder
 * answered 503 to 13-38 of them a run at 1,000 containers (none with a plain yield); at 20 ms and a plain
 * yield the longest stretch stayed <= 45 ms of CPU at 1,000 and 3,000 containers.
 */
const BATCH = 64;
const READ_SLICE_MS = 20;

/** The clock of a loop of synchronous cgroup reads: `batch` cgroups or READ_SLICE_MS, then a plain yield. */
export const readSlice = (batch = BATCH, pause: () => Promise<unknown> = () => nextTurn('plain')) => new Slice(batch, READ_SLICE_MS, pause);

/**
 * Read many cgroups, yielding to the event loop every few; vanished ones are dropped,
 * and one that cannot be read (a directory in place of a file: EISDIR; EACCES; EIO)
 * is skipped and named in `warnings`, so it never fails the whole list.
 */
export async function readMany<C extends FoundCgroup>(
  _fs: HostFs,
  cgroups: readonly C[],
  batch = BATCH,
  only: readonly StatFile[] = FILES,
  warnings?: string[],
  pause?: () => Promise<unknown>,
): Promise<(C & { stats: CgroupStats })[]> {
  const out: (C & { stats: CgroupStats })[] = [];
  const known = await readingCache();
  const want = maskOf(only);
  // malformed lines are skipped by the parsers and the rest kept; the files are named once per cgroup
  const malformed = new Set<string>();
  const slice = readSlice(batch, pause);
  for (let i = 0; i < cgroups.length; i++) {
    // every `batch` cgroups, or sooner when they take long (files of 64 KiB of junk): the loop is never held long
    if (slice.due()) await slice.pause();
    const c = cgroups[i]!;
    const got = readKnown(c.dir, only, want, known);
    if (got.error !== undefined) {
      warnings?.push(`cgroup ${c.path}: unreadable (${got.error}), skipped`);
      continue;
    }
    for (const f of got.malformed) if (want & (1 << FILE_ID.get(f)!)) malformed.add(f);
    if (malformed.size > 0) {
      warnings?.push(`cgroup ${c.path}: malformed ${[...malformed].join(', ')} (bad lines skipped, the rest read)`);
      malformed.clear();
    }
    if (got.stats) out.push({ ...c, stats: got.stats });
  }
  return out;
}

/** One cgroup as read so far in a reading: its record (null: gone), which files, what was malformed or failed. */
interface Known {
  stats: CgroupStats | null;
  mask: number;
  malformed: string[];
  error?: string;
}

const maskOf = (only: readonly StatFile[]) => {
  let m = 0;
  for (const id of idsOf(only)) m |= 1 << id;
  return m;
};

/** The cgroups read in the calling reading, by real path; null outside one (every call reads). */
const CACHE_OWNER = {};
async function readingCache(): Promise<Map<string, Known> | null> {
  const memo = memoScope.getStore();
  return memo?.open ? memo.once(CACHE_OWNER, 'cgroup-files', async () => new Map<string, Known>()) : null;
}

/** `only` of one cgroup: from the reading's cache, reading just the files it has not read yet. */
function readKnown(dir: ResolvedDir, only: readonly StatFile[], want: number, known: Map<string, Known> | null): Known {
  const k = known?.get(dir.realPath);
  if (k && (k.error !== undefined || k.stats === null || (k.mask & want) === want)) return k;
  const missing = k ? only.filter((f) => !(k.mask & (1 << FILE_ID.get(f)!))) : only;
  const seen: string[] = [];
  let next: Known;
  try {
    const stats = readCgroupStatsSync(dir, missing, (f) => seen.push(f), k?.stats ?? undefined);
    next = { stats, mask: (k?.mask ?? 0) | maskOf(missing), malformed: k ? [...k.malformed, ...seen] : seen };
  } catch (err) {
    next = { stats: null, mask: 0, malformed: [], error: errText(err) };
  }
  known?.set(dir.realPath, next);
  return next;
}

