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
 * Behaviour knobs (environment): FAKE_KUBECTL_DEBUG=ok|psa|old, FAKE_KUBECTL_WAIT=ok|timeout|hang,
 * FAKE_KUBECTL_FORWARD=ok|die, FAKE_KUBECTL_PATCH=ok|forbidden.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { log({ signal: sig, verb }); process.exit(0); });

switch (verb) {
  case 'debug': {
    const node = argv.find((a) => a.startsWith('node/')).slice(5);
    const pod = 'node-debugger-' + node + '-${FAKE_POD_SUFFIX}';
    if (process.env.FAKE_KUBECTL_DEBUG === 'old') {
      // kubectl <= 1.29: flag parsing fails (cobra's message) before anything is created
      err('error: unknown flag: --custom');
      err("See 'kubectl debug --help' for usage.");
      process.exit(1);
    }
    out('Creating debugging pod ' + pod + ' with container debugger on node ' + node + '.');
    if (process.env.FAKE_KUBECTL_DEBUG === 'psa') {
      err('Error from server (Forbidden): pods "' + pod + '" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true, hostPID=true, hostIPC=true), hostPath volumes (volume "host-root"), privileged (container "debugger" must not set securityContext.privileged=true)');
      process.exit(1);
    }
    break;
  }
  case 'wait': {
    const target = argv.find((a) => a.startsWith('pod/'));
    const mode = process.env.FAKE_KUBECTL_WAIT || 'ok';
    if (mode === 'hang') setInterval(() => {}, 1000);
    else if (mode === 'timeout') setTimeout(() => { err('error: timed out waiting for the condition on pods/' + target.slice(4)); process.exit(1); }, 200);
    else setTimeout(() => out(target + ' condition met'), 100);
    break;
  }
  case 'port-forward': {
    const spec = argv.find((a) => /^\d*:\d+$/.test(a));
    const [local, remote] = spec.split(':');
    const server = http.createServer((req, res) => {
      if (req.url === '/healthz') { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ status: 'ok', version: '0.1.0' })); return; }
      if (req.url.startsWith('/missing')) { res.statusCode = 404; res.setHeader('content-type', 'application/problem+json'); res.end(JSON.stringify({ type: 'about:blank', title: 'Not found', status: 404, detail: 'no route' })); return; }
      res.setHeader('content-type', 'text/plain'); res.end('fake nodetruth answer for ' + req.url + '\n');
    });
    server.on('connection', () => out('Handling connection for ' + server.address().port));
    server.listen(Number(local || 0), '127.0.0.1', () => {
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
    out(target + ' patched');
    break;
  }
  case 'delete': {
    const pod = argv[argv.indexOf('pod') + 1];
    if (process.env.FAKE_KUBECTL_DEBUG !== 'psa') out('pod "' + pod + '" deleted from ' + ns + ' namespace');
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
}

export interface FakeKubectl {
  dir: string;
  logFile: string;
  /** PATH with the fake first */
  path: string;
  calls(): FakeCall[];
  /** the kubectl verbs run, in order (signals left out) */
  verbs(): string[];
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
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
