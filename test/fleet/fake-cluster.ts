/**
 * A FAKE cluster for `nodetruth fleet` tests, on loopback:
 *   - an API server answering the two lists fleet asks kubectl for, in v1 shapes:
 *       GET /api/v1/nodes?labelSelector=            (NodeList)
 *       GET /api/v1/namespaces/<ns>/pods?labelSelector=  (PodList)
 *     and the port-forward streams of every pod, through a relay that counts the
 *     sessions open at once (what --concurrency bounds);
 *   - a `kubectl` script first on PATH: `get nodes|pods --output=json` asks the fake API
 *     server; `port-forward pod/<name> :<port> --address=127.0.0.1` listens on a free
 *     local port, prints client-go's "Forwarding from" line, and passes each connection
 *     to the relay; `config view` prints the caller's token. Every invocation is logged
 *     with its PID (checked after a run: no child left).
 * A pod's forward reaches `agents[pod]`: a loopback port of `host` (TLS from the client passed through,
 * or terminated here with `terminate` for an agent serving plain HTTP on loopback), or
 * `hang` (accepts and never answers). `kubectl debug node/<n>` logs the session token of its
 * profile and names a pod `node-debugger-<n>-<pid>`, whose forwards go to `debugAgent`;
 * `kubectl wait` on it never ends for the nodes in FAKE_FLEET_HANG_WAIT; `kubectl delete` logs. Only a forward to the port the agent listens on inside
 * its pod (`inPod`, default the DaemonSet's loopback port, DEFAULT_AGENT_PORT) reaches it;
 * any other port is closed at once, as a real forward to a port nothing listens on is.
 */
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { DEFAULT_AGENT_PORT } from '../../src/fleet/options.js';
import { REMOTE_PORT } from '../../src/launcher/options.js';

export type AgentTarget = { port: number; host?: string; terminate?: { key: string; cert: string }; inPod?: number } | 'hang';

const SCRIPT = String.raw`#!/usr/bin/env node
const fs = require('node:fs');
const net = require('node:net');
const argv = process.argv.slice(2);
const log = (rec) => fs.appendFileSync(process.env.FAKE_FLEET_LOG, JSON.stringify({ pid: process.pid, ...rec }) + '\n');
log({ argv });
const verb = argv.find((a) => !a.startsWith('-'));
const flag = (n) => { const a = argv.find((x) => x.startsWith('--' + n + '=')); return a ? a.slice(n.length + 3) : undefined; };
process.on('SIGTERM', () => { log({ signal: 'SIGTERM' }); process.exit(0); });
process.on('SIGINT', () => { log({ signal: 'SIGINT' }); process.exit(0); });
if (verb === 'config') { process.stdout.write(process.env.FAKE_FLEET_TOKEN || ''); process.exit(0); }
if (verb === 'get') {
  const what = argv[argv.indexOf('get') + 1];
  const sel = flag('selector') || '';
  const url = what === 'nodes' ? '/api/v1/nodes' : '/api/v1/namespaces/' + flag('namespace') + '/pods';
  fetch(process.env.FAKE_FLEET_API + url + '?labelSelector=' + encodeURIComponent(sel)).then(async (r) => {
    const t = await r.text();
    if (r.status !== 200) { process.stderr.write('Error from server: ' + t + '\n'); process.exit(1); }
    process.stdout.write(t); process.exit(0);
  }, (e) => { process.stderr.write(String(e) + '\n'); process.exit(1); });
} else if (verb === 'port-forward') {
  const pod = argv.find((a) => a.startsWith('pod/')).slice(4);
  const remote = argv.find((a) => /^:\d+$/.test(a)).slice(1);
  // the pod is looked up in --namespace, else the context's ("default" here): an agent pod
  // asked elsewhere is refused as the real API server refused a fleet caller (kubectl 1.36)
  const ns = flag('namespace') || 'default';
  if (!pod.startsWith('node-debugger-') && ns !== 'nodetruth') {
    process.stderr.write('Error from server (Forbidden): pods "' + pod + '" is forbidden: User "system:serviceaccount:callers:oncall" cannot get resource "pods" in API group "" in the namespace "' + ns + '"\n');
    process.exit(1);
  }
  // attach's debug pods: one agent for all of them (FakeCluster.debugAgent)
  const srv = net.createServer((c) => {
    const up = net.connect(Number(process.env.FAKE_FLEET_RELAY), '127.0.0.1', () => { up.write(pod + ' ' + remote + '\n'); c.pipe(up); up.pipe(c); });
    up.on('error', () => c.destroy()); c.on('error', () => up.destroy());
  });
  srv.listen(0, '127.0.0.1', () => {
    log({ forwarding: pod });
    process.stdout.write('Forwarding from 127.0.0.1:' + srv.address().port + ' -> ' + remote + '\n');
  });
} else if (verb === 'debug') {
  // kubectl debug node/<node> --custom=<profile> ...: the profile carries the session's token
  const node = argv.find((a) => a.startsWith('node/')).slice(5);
  const env = JSON.parse(fs.readFileSync(flag('custom'), 'utf8')).env || [];
  const token = (env.find((e) => e.name === 'NODETRUTH_SESSION_TOKEN') || {}).value;
  const pod = 'node-debugger-' + node + '-' + process.pid;
  log({ debug: pod, node, token, namespace: flag('namespace') || null, image: flag('image') });
  process.stdout.write('Creating debugging pod ' + pod + ' with container debugger on node ' + node + '.\n');
  process.exit(0);
} else if (verb === 'patch' || verb === 'logs') {
  process.exit(0);
} else if (verb === 'wait') {
  const pod = argv.find((a) => a.startsWith('pod/')).slice(4);
  // a debug pod that never becomes ready: kubectl wait runs until it is ended
  if ((process.env.FAKE_FLEET_HANG_WAIT || '').split(',').some((n) => n && pod.startsWith('node-debugger-' + n + '-'))) setInterval(() => {}, 1000);
  else { process.stdout.write('pod/' + pod + ' condition met\n'); process.exit(0); }
} else if (verb === 'delete') {
  log({ deleted: argv[argv.indexOf('pod') + 1] });
  process.stdout.write('pod "' + argv[argv.indexOf('pod') + 1] + '" deleted\n');
  process.exit(0);
} else { process.stderr.write('fake kubectl: unknown ' + verb + '\n'); process.exit(1); }
`;

export interface FakeNode {
  name: string;
  ready?: boolean;
  taints?: { key: string; value?: string; effect: string }[];
  labels?: Record<string, string>;
  /** the agent pod on it; null: none */
  pod?: { name: string; hostIP: string; phase?: string } | null;
}

export class FakeCluster {
  nodes: FakeNode[] = [];
  readonly agents = new Map<string, AgentTarget>();
  /** where a forward to any debug pod (`node-debugger-…`) goes: attach's agent on 127.0.0.1:7070 in its pod */
  debugAgent: AgentTarget | null = null;
  /** sessions open at once through the relay, and the most seen */
  open = 0;
  maxOpen = 0;
  readonly dir = mkdtempSync(path.join(tmpdir(), 'fleet-'));
  readonly log = path.join(this.dir, 'kubectl.jsonl');
  private api!: http.Server;
  private relay!: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly servers: net.Server[] = [];
  private savedPath = '';

  async start(token: string): Promise<this> {
    this.api = http.createServer((req, res) => this.answer(req, res));
    this.api.listen(0, '127.0.0.1');
    await once(this.api, 'listening');
    this.relay = net.createServer((c) => this.pass(c));
    this.relay.listen(0, '127.0.0.1');
    await once(this.relay, 'listening');
    const bin = path.join(this.dir, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, 'kubectl'), SCRIPT);
    chmodSync(path.join(bin, 'kubectl'), 0o755);
    writeFileSync(this.log, '');
    this.savedPath = process.env.PATH ?? '';
    Object.assign(process.env, {
      PATH: `${bin}:${this.savedPath}`,
      FAKE_FLEET_API: `http://127.0.0.1:${(this.api.address() as net.AddressInfo).port}`,
      FAKE_FLEET_RELAY: String((this.relay.address() as net.AddressInfo).port),
      FAKE_FLEET_LOG: this.log,
      FAKE_FLEET_TOKEN: token,
    });
    return this;
  }

  async stop(): Promise<void> {
    process.env.PATH = this.savedPath;
    for (const s of this.sockets) s.destroy();
    this.api.closeAllConnections();
    this.api.close();
    this.relay.close();
    for (const srv of this.servers) srv.close();
  }

  /** Every kubectl invocation logged: argv, pid, and the signals it got. */
  calls(): { pid: number; argv?: string[]; signal?: string; forwarding?: string; debug?: string; node?: string; token?: string; namespace?: string | null; image?: string; deleted?: string }[] {
    if (!existsSync(this.log)) return [];
    return readFileSync(this.log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  }

  private answer(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const sel = (url.searchParams.get('labelSelector') ?? '').split(',').filter(Boolean).map((kv) => kv.split('='));
    const send = (body: object) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/api/v1/nodes') {
      const items = this.nodes
        .filter((n) => sel.every(([k, v]) => n.labels?.[k!] === v))
        .map((n) => ({
          metadata: { name: n.name, labels: n.labels ?? {} },
          spec: n.taints ? { taints: n.taints } : {},
          status: { conditions: [{ type: 'Ready', status: n.ready === false ? 'Unknown' : 'True', reason: n.ready === false ? 'NodeStatusUnknown' : 'KubeletReady' }] },
        }));
      return send({ kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
    }
    if (/^\/api\/v1\/namespaces\/[^/]+\/pods$/.test(url.pathname)) {
      const items = this.nodes
        .filter((n) => n.pod)
        .map((n) => ({
          metadata: { name: n.pod!.name, namespace: 'nodetruth', labels: { 'app.kubernetes.io/name': 'nodetruth', 'app.kubernetes.io/component': 'agent' } },
          spec: { nodeName: n.name, hostNetwork: true },
          status: { phase: n.pod!.phase ?? 'Running', hostIP: n.pod!.hostIP, podIP: n.pod!.hostIP },
        }));
      return send({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items });
    }
    res.writeHead(404).end();
  }

  private readonly fronts = new Map<number, Promise<number>>();

  /** Where a stream to `target` goes: the agent's port, or a TLS front that terminates for it. */
  private portOf(target: Exclude<AgentTarget, 'hang'>): Promise<number> {
    if (!target.terminate) return Promise.resolve(target.port);
    let front = this.fronts.get(target.port);
    if (!front) {
      const srv = tls.createServer({ key: target.terminate.key, cert: target.terminate.cert }, (s) => {
        const up = net.connect(target.port, '127.0.0.1');
        this.sockets.add(s);
        this.sockets.add(up);
        s.pipe(up);
        up.pipe(s);
        s.on('error', () => up.destroy());
        up.on('error', () => s.destroy());
        s.on('close', () => up.destroy());
        up.on('close', () => s.destroy());
      });
      this.servers.push(srv);
      srv.listen(0, '127.0.0.1');
      front = once(srv, 'listening').then(() => (srv.address() as net.AddressInfo).port);
      this.fronts.set(target.port, front);
    }
    return front;
  }

  /** One port-forward stream: "<pod> <port in the pod>\n", then the bytes. */
  private pass(c: net.Socket): void {
    this.sockets.add(c);
    this.open++;
    this.maxOpen = Math.max(this.maxOpen, this.open);
    let closed = false;
    const done = () => {
      if (closed) return;
      closed = true;
      this.open--;
      this.sockets.delete(c);
    };
    c.on('close', done);
    c.on('error', () => c.destroy());
    let head = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      head = Buffer.concat([head, d]);
      const nl = head.indexOf(10);
      if (nl < 0) return;
      c.off('data', onData);
      c.pause();
      const [pod = '', remote] = head.subarray(0, nl).toString().split(' ');
      const rest = head.subarray(nl + 1);
      const target = pod.startsWith('node-debugger-') && this.debugAgent !== null && this.debugAgent !== 'hang' ? { inPod: REMOTE_PORT, ...this.debugAgent } : this.agents.get(pod);
      if (!target) return void c.destroy();
      if (target === 'hang') return;
      if (Number(remote) !== (target.inPod ?? DEFAULT_AGENT_PORT)) return void c.destroy();
      void this.portOf(target).then((port) => {
        const up = net.connect(port, target.terminate ? '127.0.0.1' : (target.host ?? '127.0.0.1'));
        this.sockets.add(up);
        up.on('close', () => c.destroy());
        up.on('error', () => c.destroy());
        c.on('close', () => up.destroy());
        if (rest.length) up.write(rest);
        c.pipe(up);
        up.pipe(c);
        c.resume();
      });
    };
    c.on('data', onData);
  }
}
