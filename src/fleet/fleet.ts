/**
 * `nodetruth fleet`: one question to every node's agent, bounded. At most --concurrency
 * nodes at once, each cut at --timeout, the whole run at --deadline; progress on stderr;
 * every node in the result with its answer or its error. SIGINT/SIGTERM stop new work,
 * end every kubectl child by its PID, and the rows gathered so far are printed.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { escapeTerminal, formatDuration } from '../format.js';
import type { Io, Proc } from '../launcher/kubectl.js';
import { FLEET_USAGE, FleetUsageError, parseFleetArgs, type FleetOptions } from './options.js';
import { reachByAttach } from './attach.js';
import { endProc, NodeError, reach, type ReachOptions } from './reach.js';
import { exitCodeOf, renderJson, renderRollup, type FindingLite, type Row } from './render.js';
import { globalArgs, kubectlOut, listTargets, type Target } from './targets.js';

const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const MAX_FINDINGS = 500;
const MAX_TOKEN_BYTES = 16 * 1024;

/** The caller's bearer token: --token-file, NODETRUTH_FLEET_TOKEN, or the kubeconfig user's token. */
async function callerToken(o: FleetOptions, track: (p: Proc) => () => void): Promise<string> {
  let token = '';
  if (o.tokenFile) token = (await readFile(o.tokenFile, 'utf8')).slice(0, MAX_TOKEN_BYTES + 1);
  else if (process.env.NODETRUTH_FLEET_TOKEN) token = process.env.NODETRUTH_FLEET_TOKEN;
  else token = await kubectlOut([...globalArgs(o), 'config', 'view', '--minify', '--raw', '--output=jsonpath={.users[0].user.token}'], 20_000, track);
  token = token.trim();
  if (!token || token.length > MAX_TOKEN_BYTES || /[^\x21-\x7e]/.test(token))
    throw new FleetUsageError('no bearer token: your kubeconfig user has no `token` (client certificates and exec plugins are not forwarded); pass --token-file or NODETRUTH_FLEET_TOKEN');
  return token;
}

/** A triage answer's verdict and findings, or why it is not one. */
function readTriage(body: string): Pick<Row, 'verdict' | 'findings'> {
  const r = JSON.parse(body) as { verdict?: unknown; findings?: unknown };
  if (r.verdict !== 'ok' && r.verdict !== 'warning' && r.verdict !== 'critical') throw new NodeError('the answer is not a triage report');
  const findings = (Array.isArray(r.findings) ? r.findings : [])
    .filter((f): f is FindingLite => typeof f?.id === 'string' && typeof f?.severity === 'string' && typeof f?.title === 'string')
    .slice(0, MAX_FINDINGS);
  return { verdict: r.verdict, findings };
}

/** What a non-200 answer says: the problem's title and detail. */
function problem(status: number, body: string): string {
  try {
    const p = JSON.parse(body) as { title?: unknown; detail?: unknown; code?: unknown };
    return `agent answered ${status}: ${[p.code, p.title, p.detail].filter((s) => typeof s === 'string').join(': ').slice(0, 500)}`;
  } catch {
    return `agent answered ${status}: ${body.slice(0, 200)}`;
  }
}

const safeFile = (node: string) => node.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 200);

async function fleet(o: FleetOptions, io: Io, signals: NodeJS.EventEmitter = process): Promise<number> {
  const children = new Set<Proc>();
  const track = (p: Proc) => {
    children.add(p);
    return () => children.delete(p);
  };
  const stop = new AbortController();
  let stopSignal: NodeJS.Signals | null = null;
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopSignal) return;
    stopSignal = sig;
    io.err(`nodetruth fleet: ${sig}: no new nodes; ending ${children.size} kubectl processes and printing what was gathered\n`);
    stop.abort(new Error(`stopped by ${sig}`));
    for (const p of children) void endProc(p);
  };
  for (const s of SIGNALS) signals.on(s, onSignal);
  const overall = setTimeout(() => stop.abort(new Error(`overall deadline ${formatDuration(o.deadlineMs)} passed`)), o.deadlineMs);
  overall.unref();
  const rows: Row[] = [];
  try {
    let targets: Target[];
    let token: string;
    let ca: string | null = null;
    try {
      if (o.agentCa) ca = await readFile(o.agentCa, 'utf8');
      if (o.outDir) await mkdir(o.outDir, { recursive: true });
      token = await callerToken(o, track);
      targets = await listTargets(o, Math.min(o.deadlineMs, 60_000), track);
    } catch (err) {
      if (stop.signal.aborted) return stopSignal === 'SIGINT' ? 130 : stopSignal ? 143 : 3;
      io.err(`nodetruth fleet: ${escapeTerminal((err as Error).message)}\n`);
      return err instanceof FleetUsageError ? 2 : 3;
    }
    const ro: ReachOptions = { globalArgs: globalArgs(o), namespace: o.namespace, agentPort: o.agentPort, ca, token, track };
    const total = targets.length;
    let done = 0;
    let failed = 0;
    let lastProgress = 0;
    // at most one line a second, and the last one
    const progress = () => {
      const now = Date.now();
      if (now - lastProgress < 1000 && done !== total) return;
      lastProgress = now;
      io.err(`nodetruth fleet: ${done}/${total} nodes done, ${failed} failed\n`);
    };
    const finish = (row: Row) => {
      rows.push(row);
      done++;
      if (row.error !== undefined) failed++;
      progress();
    };
    const one = async (t: Target): Promise<void> => {
      const base = { node: t.node, pod: t.pod, notes: t.notes };
      if (t.error !== null) return finish({ ...base, error: t.error, observedAt: new Date().toISOString() });
      const signal = AbortSignal.any([stop.signal, AbortSignal.timeout(o.timeoutMs)]);
      const file = o.outDir ? path.join(o.outDir, `${safeFile(t.node)}.tar.gz`) : undefined;
      try {
        const a = t.attach
          ? await reachByAttach(t.node, o.path, { ...o.attach!, kubeconfig: o.kubeconfig, context: o.context, timeoutMs: o.timeoutMs, warn: (s) => io.err(`nodetruth fleet: ${escapeTerminal(s)}\n`) }, signal, file)
          : await reach(t, o.path, ro, signal, file);
        const observedAt = new Date().toISOString();
        if (a.status !== 200) return finish({ ...base, error: problem(a.status, a.body), observedAt });
        if (o.command === 'triage') return finish({ ...base, ...readTriage(a.body), observedAt });
        if (o.command === 'capture') return finish({ ...base, observedAt, file: path.basename(file!), bytes: a.bytes } as Row);
        const body = a.contentType.includes('json') ? JSON.parse(a.body) : a.body;
        return finish({ ...base, observedAt, status: a.status, body } as Row);
      } catch (err) {
        const timedOut = signal.aborted && !stop.signal.aborted;
        const msg = timedOut ? `timed out after ${formatDuration(o.timeoutMs)}` : err instanceof NodeError || err instanceof SyntaxError ? err.message : String((err as Error).message ?? err);
        finish({ ...base, error: msg, observedAt: new Date().toISOString() });
      }
    };
    const queue = [...targets];
    const worker = async () => {
      for (let t = queue.shift(); t; t = queue.shift()) {
        if (stop.signal.aborted) {
          finish({ node: t.node, pod: t.pod, notes: t.notes, error: `not asked: ${(stop.signal.reason as Error).message}`, observedAt: new Date().toISOString() });
          continue;
        }
        await one(t);
      }
    };
    await Promise.all(Array.from({ length: Math.min(o.concurrency, Math.max(1, total)) }, worker));
    await Promise.all([...children].map(endProc));
    return print(o, rows, io, stopSignal);
  } finally {
    clearTimeout(overall);
    for (const s of SIGNALS) signals.off(s, onSignal);
    await Promise.all([...children].map(endProc));
  }
}

async function print(o: FleetOptions, rows: Row[], io: Io, stopSignal: NodeJS.Signals | null): Promise<number> {
  if (o.command === 'triage') io.out(o.json ? renderJson(rows) : renderRollup(rows));
  else if (o.command === 'get') {
    for (const r of [...rows].sort((a, b) => (a.node < b.node ? -1 : 1))) io.out(escapeTerminal(JSON.stringify(r), { json: true }) + '\n');
  } else {
    const index = [...rows].sort((a, b) => (a.node < b.node ? -1 : 1));
    await writeFile(path.join(o.outDir!, 'index.json'), JSON.stringify(index, null, 2) + '\n');
    io.out(`${escapeTerminal(path.join(o.outDir!, 'index.json'))}: ${rows.filter((r) => r.error === undefined).length} bundles, ${rows.filter((r) => r.error !== undefined).length} nodes failed\n`);
  }
  if (stopSignal) return stopSignal === 'SIGINT' ? 130 : 143;
  if (o.command === 'triage') return exitCodeOf(rows);
  return rows.some((r) => r.error !== undefined) ? 3 : 0;
}

export async function fleetMain(argv: string[], io: Io = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) }, signals: NodeJS.EventEmitter = process): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(FLEET_USAGE);
    return 0;
  }
  let o: FleetOptions;
  try {
    o = parseFleetArgs(argv);
  } catch (err) {
    if (err instanceof FleetUsageError) {
      io.err(`nodetruth fleet: ${escapeTerminal(err.message)}\n\n${FLEET_USAGE}`);
      return 2;
    }
    throw err;
  }
  return fleet(o, io, signals);
}
