/**
 * What the agent's resident memory is made of when it is idle after one round of full-node
 * requests (the target: "RSS idle after one round" ≤ 100 MiB at the FAKE 1,000-container node).
 *
 *   npx tsx bench/heap-idle.ts [containers=1000] [rounds=7] [top=25]
 *   NODETRUTH_BENCH_NODE_ARGS / NODETRUTH_BENCH_AGENT_ENV as bench/all.ts (the deploy settings:
 *   '--max-semi-space-size=4 --max-old-space-size=128' and 'MALLOC_MMAP_THRESHOLD_=131072')
 *
 * The round is bench/all.ts' steps 3-5: `rounds` requests each of /v1/containers (1.1 s apart: the
 * agent keeps a live status for 1 s), /v1/cgroups and /metrics (0.2 s apart), then one /v1/node,
 * then 5 s of quiet. The agent runs with `--inspect` on a loopback port of its own (the inspector
 * thread is started at boot, but nobody connects until the round is over). Then, in this order:
 *  1. idle: RSS, /proc/<pid>/smaps_rollup and smaps summed by kind of mapping (the node binary and
 *     other files, glibc's main arena `[heap]`, anonymous mappings by size), before any inspector
 *     session exists (connecting allocates);
 *  2. through the inspector: process.memoryUsage() and v8.getHeapSpaceStatistics();
 *  3. a full GC (HeapProfiler.collectGarbage, twice: weak references are cleared by the second),
 *     then the same figures again and RSS 2 s later;
 *  4. a heap snapshot (V8 collects before it), summed by constructor (self sizes) and the objects
 *     that dominate the most memory (retained sizes from the dominator tree), each with the
 *     chain of dominators from the GC roots: what holds it.
 * Anonymous memory minus V8's committed heap is what malloc holds (live native buffers, or freed
 * pages glibc did not return).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { freePort, rssBytes } from '../test/helpers/agent-process.js';
import { agentEnvFromBenchEnv, fakeNodeAgent, mib, report, round } from './lib.js';

const [containers = 1000, rounds = 7, top = 25] = process.argv.slice(2).map(Number);
/** when RSS is sampled again after the round (seconds), before the inspector connects */
const idleSeconds = (process.env.NODETRUTH_HEAP_IDLE_SECONDS ?? '10,20,30').split(',').map(Number);
const nodeArgs = (process.env.NODETRUTH_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const agentEnv = agentEnvFromBenchEnv();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- /proc/<pid>/smaps -------------------------------------------------------------------------

interface Mapping {
  name: string;
  sizeKb: number;
  rssKb: number;
  anonKb: number;
}

function smaps(pid: number): Mapping[] {
  const out: Mapping[] = [];
  let cur: Mapping | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      cur = { name: head[1]!.trim(), sizeKb: 0, rssKb: 0, anonKb: 0 };
      out.push(cur);
      continue;
    }
    const f = /^(\w+):\s+(\d+) kB/.exec(line);
    if (!f || !cur) continue;
    if (f[1] === 'Size') cur.sizeKb = Number(f[2]);
    else if (f[1] === 'Rss') cur.rssKb = Number(f[2]);
    else if (f[1] === 'Anonymous') cur.anonKb = Number(f[2]);
  }
  return out;
}

/** RSS in MiB by kind of mapping; anonymous mappings without a name grouped by their size */
function smapsSummary(pid: number) {
  const maps = smaps(pid);
  const kinds = new Map<string, number>();
  const add = (k: string, kb: number) => kinds.set(k, (kinds.get(k) ?? 0) + kb);
  for (const m of maps) {
    if (m.name === '') {
      const s = m.sizeKb;
      // glibc's thread arenas reserve 64 MiB (HEAP_MAX) each; V8 pages are 256 KiB, its large objects bigger
      const k = s === 65536 || s === 131072 ? 'anon 64/128 MiB (malloc thread arena)' : s <= 256 ? 'anon <= 256 KiB' : s <= 4096 ? 'anon 256 KiB-4 MiB' : 'anon > 4 MiB';
      add(k, m.rssKb);
    } else if (m.name.startsWith('/')) add(m.name.includes('/node') && !m.name.endsWith('.so') ? `file: node binary` : m.anonKb > 0 ? 'file (private, written)' : 'file: other', m.rssKb);
    else add(m.name, m.rssKb);
  }
  const rollup = Object.fromEntries(
    [...readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').matchAll(/^(\w+):\s+(\d+) kB/gm)].filter((x) => ['Rss', 'Pss', 'Anonymous', 'Private_Dirty', 'Shared_Clean', 'Private_Clean'].includes(x[1]!)).map((x) => [x[1]!, mib(Number(x[2]) * 1024)]),
  );
  return { rollupMiB: rollup, byKindMiB: Object.fromEntries([...kinds].sort((a, b) => b[1] - a[1]).map(([k, kb]) => [k, mib(kb * 1024)])), anonymousMappings: maps.filter((m) => m.name === '').length };
}

/** anonymous mappings with more than 1 MiB resident: address, permissions, size and RSS */
function bigAnon(pid: number): string[] {
  const out: string[] = [];
  let head = '';
  let size = 0;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const h = /^([0-9a-f]+-[0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (h) {
      head = h[3] ? '' : `${h[1]} ${h[2]}`;
      continue;
    }
    const f = /^(Size|Rss):\s+(\d+) kB/.exec(line);
    if (!f || !head) continue;
    if (f[1] === 'Size') size = Number(f[2]);
    else if (Number(f[2]) > 1024) out.push(`${head} size ${mib(size * 1024)} MiB rss ${mib(Number(f[2]) * 1024)} MiB`);
  }
  return out;
}

// ---- the inspector -----------------------------------------------------------------------------

class Inspector {
  private id = 0;
  private waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private listeners: ((m: { method: string; params: Record<string, unknown> }) => void)[] = [];
  private constructor(private ws: WebSocket) {
    ws.addEventListener('message', (ev) => {
      const m = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: Record<string, unknown> };
      if (m.id !== undefined) {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.error) w?.reject(new Error(m.error.message));
        else w?.resolve(m.result);
      } else if (m.method) for (const l of this.listeners) l({ method: m.method, params: m.params ?? {} });
    });
  }
  static async connect(port: number): Promise<Inspector> {
    const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
    const ws = new WebSocket(target!.webSocketDebuggerUrl);
    await new Promise((resolve, reject) => {
      ws.addEventListener('open', resolve);
      ws.addEventListener('error', () => reject(new Error('inspector: cannot connect')));
    });
    return new Inspector(ws);
  }
  send<T>(method: string, params: object = {}): Promise<T> {
    const id = ++this.id;
    this.ws.send(JSON.stringify({ id, method, params }));
    return new Promise<T>((resolve, reject) => this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject }));
  }
  on(l: (m: { method: string; params: Record<string, unknown> }) => void) {
    this.listeners.push(l);
  }
  async evaluate<T>(expression: string): Promise<T> {
    const r = await this.send<{ result: { value?: unknown }; exceptionDetails?: { text: string } }>('Runtime.evaluate', { expression, returnByValue: true });
    if (r.exceptionDetails) throw new Error(`evaluate: ${r.exceptionDetails.text}`);
    return r.result.value as T;
  }
  close() {
    this.ws.close();
  }
}

const HEAP_FIGURES = `(() => {
  const v8 = process.getBuiltinModule('v8');
  const mu = process.memoryUsage();
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size, physical: s.physical_space_size }]));
  const h = v8.getHeapStatistics();
  return { memoryUsage: mu, spaces, mallocedMemory: h.malloced_memory, peakMallocedMemory: h.peak_malloced_memory, externalMemory: h.external_memory, totalPhysical: h.total_physical_size };
})()`;

interface HeapFigures {
  memoryUsage: Record<string, number>;
  spaces: Record<string, { size: number; used: number; physical: number }>;
  mallocedMemory: number;
  peakMallocedMemory: number;
  externalMemory: number;
  totalPhysical: number;
}

const heapMiB = (h: HeapFigures) => ({
  rss: mib(h.memoryUsage.rss!),
  heapTotal: mib(h.memoryUsage.heapTotal!),
  heapUsed: mib(h.memoryUsage.heapUsed!),
  external: mib(h.memoryUsage.external!),
  arrayBuffers: mib(h.memoryUsage.arrayBuffers!),
  v8Physical: mib(h.totalPhysical),
  v8Malloced: mib(h.mallocedMemory),
  spacesUsedOfCommittedMiB: Object.fromEntries(Object.entries(h.spaces).map(([k, s]) => [k, `${mib(s.used)} / ${mib(s.physical)}`])),
});

// ---- the heap snapshot -------------------------------------------------------------------------

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** self sizes by constructor, and the biggest dominators with their chain of dominators */
function analyse(s: Snapshot, topN: number) {
  const nf = s.snapshot.meta.node_fields;
  const NF = nf.length;
  const [T, N, SELF, EC] = ['type', 'name', 'self_size', 'edge_count'].map((f) => nf.indexOf(f));
  const ef = s.snapshot.meta.edge_fields;
  const EF = ef.length;
  const [ET, EN, TO] = ['type', 'name_or_index', 'to_node'].map((f) => ef.indexOf(f));
  const ntypes = s.snapshot.meta.node_types[0];
  const etypes = s.snapshot.meta.edge_types[0];
  const WEAK = etypes.indexOf('weak');
  const SHORTCUT = etypes.indexOf('shortcut');
  const count = s.nodes.length / NF;
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e;
    e += s.nodes[i * NF + EC!]! * EF;
    firstEdge[i + 1] = e;
  }
  const typeOf = (i: number) => ntypes[s.nodes[i * NF + T!]!]!;
  const nameOf = (i: number) => s.strings[s.nodes[i * NF + N!]!]!;
  const self = (i: number) => s.nodes[i * NF + SELF!]!;
  const label = (i: number) => {
    const t = typeOf(i);
    const n = nameOf(i);
    return t === 'object' || t === 'closure' || t === 'native' ? `${t === 'object' ? '' : `${t} `}${n.slice(0, 80)}` : t === 'string' || t === 'concatenated string' || t === 'sliced string' ? `(string) ${JSON.stringify(n.slice(0, 40))}…` : `(${t}) ${n.slice(0, 60)}`;
  };
  // by constructor
  const byCtor = new Map<string, { count: number; self: number }>();
  let total = 0;
  for (let i = 0; i < count; i++) {
    const t = typeOf(i);
    const k = t === 'object' || t === 'native' ? nameOf(i) : `(${t})`;
    const e = byCtor.get(k) ?? { count: 0, self: 0 };
    e.count++;
    e.self += self(i);
    total += self(i);
    byCtor.set(k, e);
  }
  // dominators (Cooper, Harvey, Kennedy: iterative over reverse postorder), weak edges ignored
  const strong = (e: number) => {
    const t = s.edges[e + ET!]!;
    return t !== WEAK && t !== SHORTCUT;
  };
  const post = new Int32Array(count).fill(-1);
  const order: number[] = [];
  {
    const stack: number[] = [0];
    const edgeAt = new Uint32Array(count);
    const seen = new Uint8Array(count);
    seen[0] = 1;
    edgeAt[0] = firstEdge[0]!;
    while (stack.length) {
      const v = stack[stack.length - 1]!;
      let pushed = false;
      while (edgeAt[v]! < firstEdge[v + 1]!) {
        const e = edgeAt[v]!;
        edgeAt[v] = e + EF;
        if (!strong(e)) continue;
        const w = s.edges[e + TO!]! / NF;
        if (!seen[w]) {
          seen[w] = 1;
          edgeAt[w] = firstEdge[w]!;
          stack.push(w);
          pushed = true;
          break;
        }
      }
      if (!pushed) {
        stack.pop();
        post[v] = order.length;
        order.push(v);
      }
    }
  }
  const preds: number[][] = Array.from({ length: count }, () => []);
  for (let v = 0; v < count; v++) {
    if (post[v] === -1) continue;
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) if (strong(e)) preds[s.edges[e + TO!]! / NF]!.push(v);
  }
  const idom = new Int32Array(count).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (post[a]! < post[b]!) a = idom[a]!;
      while (post[b]! < post[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let k = order.length - 2; k >= 0; k--) {
      const v = order[k]!;
      let d = -1;
      for (const p of preds[v]!) if (idom[p] !== -1) d = d === -1 ? p : intersect(p, d);
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  const retained = new Float64Array(count);
  for (const v of order) retained[v]! += self(v); // postorder: children before parents
  for (const v of order) if (v !== 0) retained[idom[v]!]! += retained[v]!;
  // the biggest objects that are not merely part of a bigger one listed (skip synthetic roots)
  const candidates = order.filter((v) => v !== 0 && !typeOf(v).startsWith('synthetic') && retained[v]! > 256 * 1024).sort((a, b) => retained[b]! - retained[a]!);
  const listed: number[] = [];
  const isUnder = (v: number, u: number) => {
    for (let x = v; x !== 0; x = idom[x]!) if (x === u) return true;
    return false;
  };
  for (const v of candidates) {
    if (listed.length >= topN) break;
    // an object listed whose retained size is mostly this one's: keep the inner one only when it is a real share of the outer
    if (listed.some((u) => isUnder(v, u) && retained[v]! > 0.8 * retained[u]!)) continue;
    listed.push(v);
  }
  const edgeName = (from: number, to: number) => {
    for (let e = firstEdge[from]!; e < firstEdge[from + 1]!; e += EF) {
      if (s.edges[e + TO!]! / NF !== to) continue;
      const t = etypes[s.edges[e + ET!]!];
      const n = s.edges[e + EN!]!;
      return t === 'element' || t === 'hidden' ? `[${n}]` : `.${s.strings[n]}`;
    }
    return '';
  };
  const chain = (v: number) => {
    const out: string[] = [];
    for (let x = v, n = 0; x !== 0 && n < 14; x = idom[x]!, n++) out.push(`${label(x)} ${mib(retained[x]!)}MiB${edgeName(idom[x]!, x)}`);
    return out.reverse().join(' ← ');
  };
  return {
    nodes: count,
    selfTotalMiB: mib(total),
    byConstructor: [...byCtor].sort((a, b) => b[1].self - a[1].self).slice(0, topN).map(([k, e]) => ({ ctor: k.slice(0, 80), count: e.count, selfMiB: mib(e.self) })),
    biggestRetainers: listed.map((v) => ({ what: label(v), retainedMiB: mib(retained[v]!), selfKiB: round(self(v) / 1024, 1), dominators: chain(v) })),
  };
}

async function snapshot(insp: Inspector): Promise<Snapshot> {
  const chunks: string[] = [];
  insp.on((m) => {
    if (m.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.push(m.params.chunk as string);
  });
  await insp.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false, captureNumericValue: false });
  return JSON.parse(chunks.join('')) as Snapshot;
}

// ---- the run -----------------------------------------------------------------------------------

const inspectPort = await freePort();
const node = await fakeNodeAgent({ pods: Math.ceil(containers / 4), perPod: 4, journal: false, nodeArgs: [...nodeArgs, `--inspect=127.0.0.1:${inspectPort}`], env: agentEnv, agentFlags: ['--cri-timeout', '10s'] });
const { url } = node.agent;
const pid = node.agent.pid;
try {
  await sleep(2000);
  const afterStart: Record<string, unknown> = { rssMiB: mib(rssBytes(pid)), smaps: smapsSummary(pid) };
  if (process.env.NODETRUTH_HEAP_AT_START === '1') {
    // the live heap at start, for comparison (changes what the round starts from: opt-in)
    const insp = await Inspector.connect(inspectPort);
    afterStart.heapBeforeGc = heapMiB(await insp.evaluate<HeapFigures>(HEAP_FIGURES));
    await insp.send('HeapProfiler.collectGarbage');
    await insp.send('HeapProfiler.collectGarbage');
    afterStart.heapAfterGc = heapMiB(await insp.evaluate<HeapFigures>(HEAP_FIGURES));
    insp.close();
    await sleep(1000);
    afterStart.rssAfterGcMiB = mib(rssBytes(pid));
  }
  const get = async (p: string) => {
    const res = await fetch(`${url}${p}`).catch(() => fetch(`${url}${p}`));
    const n = (await res.arrayBuffer()).byteLength;
    if (res.status !== 200) throw new Error(`${p}: status ${res.status}`);
    return n;
  };
  const bytes: Record<string, number> = {};
  for (const [p, gap] of [['/v1/containers', 1100], ['/v1/cgroups', 200], ['/metrics', 200]] as const) {
    for (let i = 0; i < rounds; i++) {
      bytes[p] = await get(p);
      await sleep(gap);
    }
  }
  bytes['/v1/node'] = await get('/v1/node');
  const roundEnded = Date.now();
  await sleep(5000);
  // bench/all.ts' figure: 5 s after the round
  const idle = { rssMiB: mib(rssBytes(pid)), smaps: smapsSummary(pid), bigAnonymousMappings: bigAnon(pid) };
  // and later, still without a request: V8's memory reducer acts only after its start delay (8 s by default)
  const later: { secondsAfterRound: number; rssMiB: number; anonymousMiB: number }[] = [];
  for (const at of idleSeconds) {
    await sleep(Math.max(0, roundEnded + at * 1000 - Date.now()));
    later.push({ secondsAfterRound: at, rssMiB: mib(rssBytes(pid)), anonymousMiB: smapsSummary(pid).rollupMiB.Anonymous! });
  }
  const idleLater = { samples: later, smaps: smapsSummary(pid) };
  const insp = await Inspector.connect(inspectPort);
  const beforeGc = heapMiB(await insp.evaluate<HeapFigures>(HEAP_FIGURES));
  await insp.send('HeapProfiler.collectGarbage');
  await insp.send('HeapProfiler.collectGarbage');
  await sleep(2000);
  const afterGcFigures = await insp.evaluate<HeapFigures>(HEAP_FIGURES);
  const afterGc = { ...heapMiB(afterGcFigures), rssMiBBySmaps: mib(rssBytes(pid)), smaps: smapsSummary(pid), bigAnonymousMappings: bigAnon(pid) };
  // diagnostic only (NODETRUTH_HEAP_TRIM=1): glibc's malloc_trim(0) called in the agent through gdb, to
  // tell freed-but-kept malloc pages from live native memory
  let afterMallocTrim: object | undefined;
  if (process.env.NODETRUTH_HEAP_TRIM === '1') {
    execFileSync('gdb', ['-p', String(pid), '-batch', '-ex', 'call (int) malloc_trim(0)'], { stdio: 'ignore', timeout: 60_000 });
    await sleep(500);
    afterMallocTrim = { rssMiB: mib(rssBytes(pid)), smaps: smapsSummary(pid), bigAnonymousMappings: bigAnon(pid) };
  }
  const heap = analyse(await snapshot(insp), top);
  insp.close();
  report('heap-idle', `${nodeArgs.length ? `NODETRUTH_BENCH_NODE_ARGS='${nodeArgs.join(' ')}' ` : ''}${Object.keys(agentEnv).length ? `NODETRUTH_BENCH_AGENT_ENV='${process.env.NODETRUTH_BENCH_AGENT_ENV}' ` : ''}npx tsx bench/heap-idle.ts ${containers} ${rounds} ${top}`, {
    nodeArgs,
    agentEnv,
    bytes,
    afterStart,
    idle,
    idleLater,
    v8Trace: node.agent.lines.filter((l) => !l.startsWith('{')).slice(-60),
    heapIdleBeforeGc: beforeGc,
    afterFullGc: afterGc,
    afterMallocTrim,
    heapSnapshotAfterGc: heap,
  });
} finally {
  await node.stop();
}
