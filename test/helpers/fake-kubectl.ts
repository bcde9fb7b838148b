/**
 * A FAKE `kubectl` for launcher tests: a script named `kubectl` in a temp dir that goes
 * first on PATH. It records every invocation (argv, pid, and the signals it gets) as a
 * JSON line and plays back what the real kubectl prints for the same command; the strings
 * come from kubectl's source:
 *   debug        pkg/cmd/debug/debug.go   "Creating debugging pod %s with container %s on node %s."
 *   wait         pkg/cmd/wait             "pod/<name> condition met"; on timeout
 *                                         "error: timed out waiting for the condition on pods/<name>"
 *   port-forward client-go portforward    "Forwarding from 127.0.0.1:<port> -> <port>",
 *                                         "Handling connection for <port>"
 *   delete       pkg/cmd/delete/delete.go `pod "<name>" deleted from <ns> namespace`
 *   patch        pkg/cmd/patch/patch.go   "pod/<name> patched"; refused: the API server's Forbidden
 * Its port-forward really listens on the local port and answers HTTP like a tiny nodetruth
 * (/healthz, and a plain-text echo of any other path), so the launcher's own checks and the
 * printed curl commands can be exercised for real.
 *
 * It keeps the pods it "created" in pods.json beside its log, as the API server would hold
 * them: the debug pod gets kubectl's own label and the env of the --custom profile (read
 * from the file it names, /dev/stdin included, and recorded as `custom` in the call);
 * patch merges labels and the deadline into it, delete removes it, and
 *   get pods --selector=app.kubernetes.io/managed-by=kubectl-debug --field-selector=spec.nodeName=<node>
 *       --output=jsonpath=…   prints "name<TAB>NODETRUTH_SESSION_ID" lines, as kubectl would for
 *                             the launcher's template. Like the agent run with that pod's
 * NODETRUTH_SESSION_TOKEN, the port-forward's tiny nodetruth answers every path but /healthz
 * with 401 unless the X-Nodetruth-Session header carries it.
 *
 * Behaviour knobs (environment): FAKE_KUBECTL_DEBUG=ok|psa|old|unparsable|unparsable-fail
 * (unparsable: the pod is created but no "Creating debugging pod" line is printed, as with
 * -q or another wording; -fail: then kubectl exits 1, as when its client timed out after the
 * API server had created the pod), FAKE_KUBECTL_WAIT=ok|timeout|hang|file (ready once a file
 * named ready appears beside the log; a file forward-to there holding a port makes port-forward
 * pass bytes to that port: a real agent the test started with the pod's env),
 * FAKE_KUBECTL_FORWARD=ok|die, FAKE_KUBECTL_PATCH=ok|forbidden, FAKE_KUBECTL_GET=ok|forbidden,
 * FAKE_KUBECTL_SUFFIX=<5 chars> (the debug pod's random suffix; default FAKE_POD_SUFFIX).
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const FAKE_POD_SUFFIX = 'x7k2p'; // kubectl's suffix alphabet: bcdfghjklmnpqrstvwxz2456789

const SCRIPT = String.raw`
const fs = require('node:fs');
const http = require('node:http');
const log = (rec) => fs.appendFileSync(process.env.FAKE_KUBECTL_LOG, JSON.stringify({ pid: process.pid, ...rec }) + '\n');
const argv = process.argv.slice(2);
log({ argv, customProfileGate: process.env.KUBECTL_DEBUG_CUSTOM_PROFILE ?? null });
const nsArg = argv.find((a) => a.startsWith('--namespace='));
const ns = nsArg ? nsArg.slice('--namespace='.length) : 'default';
const verb = argv.find((a) => !a.startsWith('-'));
const out = (s) => process.stdout.write(s + '\n');
const err = (s) => process.stderr.write(s + '\n');
const PODS = require('node:path').join(require('node:path').dirname(process.env.FAKE_KUBECTL_LOG), 'pods.json');
const pods = () => (fs.existsSync(PODS) ? JSON.parse(fs.readFileSync(PODS, 'utf8')) : []);
// written whole and renamed into place: a reader (the test, another kubectl) never sees a half-written file
const savePods = (ps) => { const tmp = PODS + '.' + process.pid; fs.writeFileSync(tmp, JSON.stringify(ps)); fs.renameSync(tmp, PODS); };
const envOf = (pod, name) => ((pod && pod.env) || []).find((e) => e.name === name)?.value ?? null;
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { log({ signal: sig, verb }); process.exit(0); });

switch (verb) {
  case 'debug': {
    const node = argv.find((a) => a.startsWith('node/')).slice(5);
    const pod = 'node-debugger-' + node + '-' + (process.env.FAKE_KUBECTL_SUFFIX || '${FAKE_POD_SUFFIX}');
    if (process.env.FAKE_KUBECTL_DEBUG === 'old') {
      // kubectl <= 1.29: flag parsing fails (cobra's message) before anything is created
      err('error: unknown flag: --custom');
      err("See 'kubectl debug --help' for usage.");
      process.exit(1);
    }
    const customArg = argv.find((a) => a.startsWith('--custom='));
    let custom = null;
    if (customArg) {
      const text = fs.readFileSync(customArg.slice('--custom='.length), 'utf8');
      try { custom = JSON.parse(text); } catch { custom = { unparsed: text }; }
    }
    log({ custom });
    const mode = process.env.FAKE_KUBECTL_DEBUG || 'ok';
    if (!mode.startsWith('unparsable')) out('Creating debugging pod ' + pod + ' with container debugger on node ' + node + '.');
    if (mode === 'psa') {
      err('Error from server (Forbidden): pods "' + pod + '" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true, hostPID=true, hostIPC=true), hostPath volumes (volume "host-root"), privileged (container "debugger" must not set securityContext.privileged=true)');
      process.exit(1);
    }
    savePods([...pods(), { name: pod, namespace: ns, nodeName: node, labels: { 'app.kubernetes.io/managed-by': 'kubectl-debug' }, env: (custom && custom.env) || [], activeDeadlineSeconds: null }]);
    if (mode === 'unparsable-fail') {
      err('error: context deadline exceeded');
      process.exit(1);
    }
    break;
  }
  case 'wait': {
    const target = argv.find((a) => a.startsWith('pod/'));
    const mode = process.env.FAKE_KUBECTL_WAIT || 'ok';
    if (mode === 'hang') setInterval(() => {}, 1000);
    else if (mode === 'file') {
      // Ready once the test says so (it started a real agent for the pod): the file ready beside the log
      const ready = require('node:path').join(require('node:path').dirname(process.env.FAKE_KUBECTL_LOG), 'ready');
      const poll = setInterval(() => { if (fs.existsSync(ready)) { clearInterval(poll); out(target + ' condition met'); } }, 25);
    }
    else if (mode === 'timeout') setTimeout(() => { err('error: timed out waiting for the condition on pods/' + target.slice(4)); process.exit(1); }, 200);
    else setTimeout(() => out(target + ' condition met'), 100);
    break;
  }
  case 'port-forward': {
    const spec = argv.find((a) => /^\d*:\d+$/.test(a));
    const [local, remote] = spec.split(':');
    const target = pods().find((p) => 'pod/' + p.name === argv.find((a) => a.startsWith('pod/')));
    const token = envOf(target, 'NODETRUTH_SESSION_TOKEN');
    // forward-to beside the log: the port of a real agent the test started; bytes are passed
    // both ways as kubectl's stream would, instead of the tiny nodetruth below answering
    const forwardTo = require('node:path').join(require('node:path').dirname(process.env.FAKE_KUBECTL_LOG), 'forward-to');
    const realPort = fs.existsSync(forwardTo) ? Number(fs.readFileSync(forwardTo, 'utf8')) : null;
    const server = realPort !== null ? require('node:net').createServer((c) => {
      const up = require('node:net').connect(realPort, '127.0.0.1');
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    }) : http.createServer((req, res) => {
      if (req.url !== '/healthz' && token !== null && req.headers['x-nodetruth-session'] !== token) { res.statusCode = 401; res.setHeader('content-type', 'application/problem+json'); res.end(JSON.stringify({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'no session token' })); return; }
      if (req.url === '/healthz') { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ status: 'ok', version: '0.1.0' })); return; }
      if (req.url.startsWith('/missing')) { res.statusCode = 404; res.setHeader('content-type', 'application/problem+json'); res.end(JSON.stringify({ type: 'about:blank', title: 'Not found', status: 404, detail: 'no route' })); return; }
      res.setHeader('content-type', 'text/plain'); res.end('fake nodetruth answer for ' + req.url + '\n');
    });
    server.on('connection', () => out('Handling connection for ' + server.address().port));
    server.listen(Number(local || 0), '127.0.0.1', () => {
      log({ forwarding: server.address().port });
      out('Forwarding from 127.0.0.1:' + server.address().port + ' -> ' + remote);
      if (process.env.FAKE_KUBECTL_FORWARD === 'die') setTimeout(() => { err('error: lost connection to pod'); process.exit(1); }, 300);
    });
    break;
  }
  case 'logs':
    out('nodetruth: listen EADDRINUSE: address already in use 127.0.0.1:7070');
    break;
  case 'patch': {
    const target = argv.find((a) => a.startsWith('pod/'));
    if (process.env.FAKE_KUBECTL_PATCH === 'forbidden') {
      err('Error from server (Forbidden): pods "' + target.slice(4) + '" is forbidden: User "alice" cannot patch resource "pods" in API group "" in the namespace "' + ns + '"');
      process.exit(1);
    }
    const patch = JSON.parse(argv.find((a) => a.startsWith('--patch=')).slice('--patch='.length));
    savePods(pods().map((p) => (p.name === target.slice(4) ? { ...p, labels: { ...p.labels, ...(patch.metadata?.labels ?? {}) }, activeDeadlineSeconds: patch.spec?.activeDeadlineSeconds ?? p.activeDeadlineSeconds } : p)));
    out(target + ' patched');
    break;
  }
  case 'delete': {
    const pod = argv[argv.indexOf('pod') + 1];
    const had = pods().some((p) => p.name === pod);
    savePods(pods().filter((p) => p.name !== pod));
    if (process.env.FAKE_KUBECTL_DEBUG !== 'psa') out('pod "' + pod + '" deleted from ' + ns + ' namespace');
    else if (had) out('pod "' + pod + '" deleted from ' + ns + ' namespace');
    break;
  }
  case 'get': {
    if (process.env.FAKE_KUBECTL_GET === 'forbidden') {
      err('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "' + ns + '"');
      process.exit(1);
    }
    const selector = argv.find((a) => a.startsWith('--selector='));
    const field = argv.find((a) => a.startsWith('--field-selector='));
    const output = argv.find((a) => a.startsWith('--output=jsonpath='));
    if (argv[argv.indexOf('get') + 1] !== 'pods' || selector !== '--selector=app.kubernetes.io/managed-by=kubectl-debug' || !field || !/^--field-selector=spec\.nodeName=[a-z0-9.-]+$/.test(field) || !output || !output.includes('@.name=="NODETRUTH_SESSION_ID"')) {
      err('fake kubectl: get supports only the launcher\'s lookup of a session pod, got ' + JSON.stringify(argv));
      process.exit(1);
    }
    const node = field.slice('--field-selector=spec.nodeName='.length);
    for (const p of pods()) {
      if (p.namespace === ns && p.nodeName === node && p.labels['app.kubernetes.io/managed-by'] === 'kubectl-debug') process.stdout.write(p.name + '\t' + (envOf(p, 'NODETRUTH_SESSION_ID') ?? '') + '\n');
    }
    break;
  }
  default:
    err('error: unknown command "' + verb + '" for "kubectl"');
    process.exit(1);
}
`;

export interface FakeCall {
  pid: number;
  argv?: string[];
  customProfileGate?: string | null;
  signal?: string;
  verb?: string;
  /** port-forward: the local port it listens on */
  forwarding?: number;
  /** debug: the --custom profile as kubectl read it (null without --custom) */
  custom?: Record<string, unknown> | null;
}

/** A pod the fake kubectl "created", as the API server would hold it. */
export interface FakePod {
  name: string;
  namespace: string;
  nodeName: string;
  labels: Record<string, string>;
  env: { name: string; value?: string }[];
  activeDeadlineSeconds: number | null;
}

export interface FakeKubectl {
  dir: string;
  logFile: string;
  /** PATH with the fake first */
  path: string;
  calls(): FakeCall[];
  /** the kubectl verbs run, in order (signals left out) */
  verbs(): string[];
  /** the pods that exist now: created by debug, not yet deleted */
  pods(): FakePod[];
  cleanup(): void;
}

export function installFakeKubectl(): FakeKubectl {
  const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-fake-kubectl-'));
  const logFile = path.join(dir, 'calls.jsonl');
  writeFileSync(logFile, '');
  const file = path.join(dir, 'kubectl');
  // CommonJS body under an absolute node (the test's own), whatever PATH holds.
  writeFileSync(file, `#!${process.execPath}\n${SCRIPT}`);
  chmodSync(file, 0o755);
  writeFileSync(path.join(dir, 'package.json'), '{"type":"commonjs"}\n');
  const calls = () =>
    readFileSync(logFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as FakeCall);
  return {
    dir,
    logFile,
    path: `${dir}:${process.env.PATH ?? ''}`,
    calls,
    verbs: () => calls().flatMap((c) => (c.argv ? [c.argv.find((a) => !a.startsWith('-')) ?? ''] : [])),
    pods: () => (existsSync(path.join(dir, 'pods.json')) ? (JSON.parse(readFileSync(path.join(dir, 'pods.json'), 'utf8')) as FakePod[]) : []),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
