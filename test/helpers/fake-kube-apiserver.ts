/**
 * A FAKE Kubernetes API server for tests: a node:http server on loopback that
 * answers the few calls nodetruth makes with real Kubernetes JSON shapes:
 *
 *   GET  /api/v1/pods?fieldSelector=spec.nodeName=<n>&limit=&continue=   (PodList, paged)
 *   GET  /api/v1[/namespaces/<ns>]/events?fieldSelector=involvedObject.<f>=<v>,...&limit=&continue=
 *                                                                          (EventList, paged)
 *   POST /apis/authentication.k8s.io/v1/tokenreviews                      (TokenReview)
 *   POST /apis/authorization.k8s.io/v1/subjectaccessreviews               (SubjectAccessReview)
 *
 * Like a real API server it demands nodetruth's own bearer token (from the
 * kubeconfig it writes) and answers 401/403/404 as v1 Status objects. It is
 * not a Kubernetes API server: no watch, no other resources.
 *
 * For kubectl (the e2e captures the pod `kubectl debug node/...` creates) it also serves
 * discovery (/version, /api, /apis, /api/v1), GET /api/v1/nodes/<name> from `nodes`, and
 * POST /api/v1/namespaces/<ns>/pods, which records the pod in `created`. With `tls`
 * it serves HTTPS (the e2e guest's in-cluster client checks it against ca.crt).
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/** The credential nodetruth presents to this fake (from the kubeconfig). */
export const AGENT_TOKEN = 'nodetruth-agent-sa-token';

export interface FakeUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
  /** audiences the token is valid for (TokenReview status.audiences) */
  audiences?: string[];
}

export interface ResourceAttributes {
  verb?: string;
  resource?: string;
  subresource?: string;
  name?: string;
  namespace?: string;
  group?: string;
}

export interface SarRequest {
  user: string;
  groups: string[];
  uid?: string;
  resourceAttributes: ResourceAttributes;
}

/** `hold`: the request waits until release(), then is answered by the mode in force then (hold counting as ok) */
type Mode = 'ok' | 'error500' | 'hang' | 'forbidden' | 'hold';

export class FakeKubeApiServer {
  readonly server: Server;
  url = '';
  /** pods served by the list call (filtered by spec.nodeName like the real field selector) */
  pods: object[] = [];
  /** token → who it is; unknown tokens are not authenticated */
  readonly tokens = new Map<string, FakeUser>();
  /** who may do what; default: nobody */
  authorize: (req: SarRequest) => { allowed: boolean; reason?: string; denied?: boolean } = () => ({ allowed: false });
  /** failure modes per endpoint */
  mode: { pods: Mode; events: Mode; tokenreviews: Mode; subjectaccessreviews: Mode } = { pods: 'ok', events: 'ok', tokenreviews: 'ok', subjectaccessreviews: 'ok' };
  /** core/v1 Events served by the events lists (filtered by the field selector like the real one) */
  events: object[] = [];
  /** every request seen: method, path with query, parsed JSON body */
  readonly requests: { method: string; url: string; body: unknown; authorization: string | undefined }[] = [];
  private readonly hanging = new Set<ServerResponse>();
  /** requests waiting in mode `hold`, and who waits for them to arrive */
  private readonly held: (() => void)[] = [];
  private heldWaiters: { n: number; resolve: () => void }[] = [];
  /** nodes GET /api/v1/nodes/<name> answers (kubectl debug node/<name> reads its node first) */
  nodes: object[] = [];
  /** every pod created through POST /api/v1/namespaces/<ns>/pods, as the server stored it */
  readonly created: object[] = [];
  private readonly scheme: 'http' | 'https';
  /** turns a protobuf request body into the object it encodes (kubectl's POSTs) */
  decodeProtobuf: ((body: Buffer) => unknown) | undefined;

  constructor(opts: { tls?: { key: string | Buffer; cert: string | Buffer } } = {}) {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res);
    this.scheme = opts.tls ? 'https' : 'http';
    this.server = opts.tls ? createTlsServer({ key: opts.tls.key, cert: opts.tls.cert }, handler) : createServer(handler);
  }

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `${this.scheme}://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const r of this.hanging) r.destroy();
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  /** Requests held by mode `hold` and not yet released. */
  get heldCount(): number {
    return this.held.length;
  }

  /** Resolves once at least `n` requests are held. */
  waitForHeld(n: number): Promise<void> {
    if (this.held.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.heldWaiters.push({ n, resolve }));
  }

  /** Answer every held request, by the modes in force now (`hold` counting as ok); returns how many. */
  release(): number {
    const run = this.held.splice(0);
    for (const answer of run) answer();
    return run.length;
  }

  private hold(res: ServerResponse, answer: () => void): void {
    this.hanging.add(res);
    res.once('close', () => this.hanging.delete(res));
    this.held.push(answer);
    const ready = this.heldWaiters.filter((w) => this.held.length >= w.n);
    this.heldWaiters = this.heldWaiters.filter((w) => this.held.length < w.n);
    for (const w of ready) w.resolve();
  }

  count(pathPrefix: string): number {
    return this.requests.filter((r) => r.url.startsWith(pathPrefix)).length;
  }

  /**
   * A kubeconfig for this server. client-node refuses http:// unless
   * insecure-skip-tls-verify is set; JSON is valid YAML.
   */
  writeKubeconfig(dir: string, token = AGENT_TOKEN): string {
    const file = path.join(dir, 'kubeconfig');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'fake', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'nodetruth', user: { token } }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'nodetruth' } }],
        'current-context': 'fake',
      }),
    );
    return file;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = null;
    // kubectl sends built-in types as protobuf: decoded by `decodeProtobuf` when a test gives one
    const type = req.headers['content-type'] ?? '';
    if (text && type.startsWith('application/vnd.kubernetes.protobuf')) {
      if (!this.decodeProtobuf) return status(res, 415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: application/json');
      body = this.decodeProtobuf(Buffer.concat(chunks));
    } else if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        return status(res, 400, 'BadRequest', 'request body is not JSON');
      }
    }
    const url = new URL(req.url ?? '/', this.url);
    this.requests.push({ method: req.method ?? '', url: url.pathname + url.search, body, authorization: req.headers.authorization });
    if (req.headers.authorization !== `Bearer ${AGENT_TOKEN}`) return status(res, 401, 'Unauthorized', 'Unauthorized');

    if (req.method === 'GET' && url.pathname === '/api/v1/pods') return this.listPods(url, res);
    const events = req.method === 'GET' ? /^\/api\/v1(?:\/namespaces\/([^/]+))?\/events$/.exec(url.pathname) : null;
    if (events) return this.listEvents(events[1], url, res);
    if (req.method === 'POST' && url.pathname === '/apis/authentication.k8s.io/v1/tokenreviews') return this.tokenReview(body, res);
    if (req.method === 'POST' && url.pathname === '/apis/authorization.k8s.io/v1/subjectaccessreviews') return this.sar(body, res);
    if (req.method === 'GET') {
      const found = discovery(url.pathname);
      if (found) return json(res, 200, found);
      const node = /^\/api\/v1\/nodes\/([^/]+)$/.exec(url.pathname);
      const n = node && this.nodes.find((x) => (x as { metadata?: { name?: string } }).metadata?.name === node[1]);
      if (n) return json(res, 200, n);
      if (node) return status(res, 404, 'NotFound', `nodes "${node[1]}" not found`);
    }
    const create = req.method === 'POST' ? /^\/api\/v1\/namespaces\/([^/]+)\/pods$/.exec(url.pathname) : null;
    if (create) return this.createPod(create[1]!, body, res);
    return status(res, 404, 'NotFound', 'the server could not find the requested resource');
  }

  /** true when the mode took care of the response */
  private failed(mode: Mode, res: ServerResponse, resource: string): boolean {
    if (mode === 'ok' || mode === 'hold') return false;
    if (mode === 'hang') {
      this.hanging.add(res);
      res.once('close', () => this.hanging.delete(res));
      return true;
    }
    if (mode === 'forbidden') {
      status(res, 403, 'Forbidden', `${resource} is forbidden: User "system:serviceaccount:kube-system:nodetruth" cannot create resource "${resource}"`);
      return true;
    }
    status(res, 500, 'InternalError', 'Internal error occurred: etcdserver: request timed out');
    return true;
  }

  private listPods(url: URL, res: ServerResponse): void {
    if (this.failed(this.mode.pods, res, 'pods')) return;
    const sel = url.searchParams.get('fieldSelector') ?? '';
    const m = /^spec\.nodeName=(.+)$/.exec(sel);
    if (sel && !m) return status(res, 400, 'BadRequest', `unable to parse requested fieldSelector ${sel}`);
    const items = this.pods.filter((p) => !m || (p as { spec?: { nodeName?: string } }).spec?.nodeName === m[1]);
    const limit = Number(url.searchParams.get('limit') ?? 0);
    const start = Number(url.searchParams.get('continue') ?? 0);
    const page = limit > 0 ? items.slice(start, start + limit) : items.slice(start);
    const next = limit > 0 && start + limit < items.length ? String(start + limit) : undefined;
    json(res, 200, {
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '12345', ...(next ? { continue: next, remainingItemCount: items.length - start - limit } : {}) },
      items: page,
    });
  }

  /**
   * Events of a namespace or of all, by the field selectors the API server supports for
   * Events (an unsupported label is a 400 as there), paged by limit/continue.
   */
  private listEvents(namespace: string | undefined, url: URL, res: ServerResponse): void {
    if (this.failed(this.mode.events, res, 'events')) return;
    const sel = url.searchParams.get('fieldSelector') ?? '';
    const want: [string, string][] = [];
    for (const term of sel ? sel.split(',') : []) {
      const m = /^(involvedObject\.(?:kind|namespace|name|uid|apiVersion|resourceVersion|fieldPath)|reason|source|type|metadata\.namespace|metadata\.name)=(.*)$/.exec(term);
      if (!m) return status(res, 400, 'BadRequest', `unable to parse requested fieldSelector: field label not supported: ${term.split('=')[0]}`);
      want.push([m[1]!, m[2]!]);
    }
    const at = (o: unknown, p: string): unknown => (o && typeof o === 'object' ? (o as Record<string, unknown>)[p] : undefined);
    const field = (e: object, k: string): unknown => (k === 'source' ? at(at(e, 'source'), 'component') : k.split('.').reduce<unknown>(at, e));
    const items = this.events.filter((e) => (!namespace || (e as { metadata?: { namespace?: string } }).metadata?.namespace === namespace) && want.every(([k, v]) => String(field(e, k) ?? '') === v));
    const limit = Number(url.searchParams.get('limit') ?? 0);
    const start = Number(url.searchParams.get('continue') ?? 0);
    const page = limit > 0 ? items.slice(start, start + limit) : items.slice(start);
    const next = limit > 0 && start + limit < items.length ? String(start + limit) : undefined;
    json(res, 200, { kind: 'EventList', apiVersion: 'v1', metadata: { resourceVersion: '52000', ...(next ? { continue: next, remainingItemCount: items.length - start - limit } : {}) }, items: page });
  }

  /** What the API server adds to a created pod: name from generateName, uid, timestamps, Pending. */
  private createPod(namespace: string, body: unknown, res: ServerResponse): void {
    const pod = structuredClone((body ?? {}) as { metadata?: Record<string, unknown>; status?: unknown });
    const meta = (pod.metadata ??= {});
    if (!meta.name && typeof meta.generateName === 'string') meta.name = meta.generateName + Math.random().toString(36).slice(2, 7);
    Object.assign(meta, { namespace, uid: randomUUID(), resourceVersion: String(2000 + this.created.length), creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') });
    pod.status = { phase: 'Pending', qosClass: 'Burstable' };
    this.created.push(pod);
    json(res, 201, pod);
  }

  private tokenReview(body: unknown, res: ServerResponse, released = false): void {
    if (!released && this.mode.tokenreviews === 'hold') return this.hold(res, () => this.tokenReview(body, res, true));
    if (this.failed(this.mode.tokenreviews, res, 'tokenreviews')) return;
    const spec = (body as { spec?: { token?: string; audiences?: string[] } })?.spec ?? {};
    const user = spec.token ? this.tokens.get(spec.token) : undefined;
    const wanted = spec.audiences ?? [];
    const valid = user?.audiences ?? ['https://kubernetes.default.svc'];
    const audOk = wanted.length === 0 || wanted.some((a) => valid.includes(a));
    const status =
      user && audOk
        ? {
            authenticated: true,
            user: { username: user.username, uid: user.uid ?? 'uid-1', groups: user.groups ?? ['system:authenticated'], ...(user.extra ? { extra: user.extra } : {}) },
            audiences: wanted.length > 0 ? wanted.filter((a) => valid.includes(a)) : valid,
          }
        : { user: {}, error: user ? '[invalid bearer token, token audiences is invalid for the target audiences]' : '[invalid bearer token, square/go-jose: error in cryptographic primitive]' };
    // The real API server echoes the spec back, token included; nodetruth must never log it.
    json(res, 201, { kind: 'TokenReview', apiVersion: 'authentication.k8s.io/v1', metadata: { creationTimestamp: null }, spec, status });
  }

  private sar(body: unknown, res: ServerResponse, released = false): void {
    if (!released && this.mode.subjectaccessreviews === 'hold') return this.hold(res, () => this.sar(body, res, true));
    if (this.failed(this.mode.subjectaccessreviews, res, 'subjectaccessreviews')) return;
    const spec = (body as { spec?: { user?: string; groups?: string[]; uid?: string; resourceAttributes?: ResourceAttributes } })?.spec ?? {};
    const r = this.authorize({ user: spec.user ?? '', groups: spec.groups ?? [], ...(spec.uid ? { uid: spec.uid } : {}), resourceAttributes: spec.resourceAttributes ?? {} });
    json(res, 201, {
      kind: 'SubjectAccessReview',
      apiVersion: 'authorization.k8s.io/v1',
      metadata: { creationTimestamp: null },
      spec,
      status: { allowed: r.allowed, ...(r.denied ? { denied: true } : {}), ...(r.reason ? { reason: r.reason } : {}) },
    });
  }
}

/** The legacy discovery documents kubectl asks for before it resolves node/<name>. */
function discovery(pathname: string): object | undefined {
  const resource = (name: string, kind: string, namespaced: boolean, verbs: string[]) => ({ name, singularName: kind.toLowerCase(), namespaced, kind, verbs });
  switch (pathname) {
    case '/version':
      return { major: '1', minor: '32', gitVersion: 'v1.32.0-fake', platform: 'linux/amd64' };
    case '/api':
      return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] };
    case '/apis':
      return { kind: 'APIGroupList', apiVersion: 'v1', groups: [] };
    case '/api/v1':
      return { kind: 'APIResourceList', groupVersion: 'v1', resources: [resource('nodes', 'Node', false, ['get', 'list']), resource('pods', 'Pod', true, ['create', 'get', 'list'])] };
    default:
      return undefined;
  }
}

function json(res: ServerResponse, code: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  json(res, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

/** A v1 Pod as the API server returns it, with the fields drift reads. */
export function apiPod(o: {
  name: string;
  namespace?: string;
  uid: string;
  nodeName: string;
  phase?: string;
  containers?: { name: string; id?: string; state: 'running' | 'waiting' | 'terminated'; reason?: string; restartCount?: number }[];
  annotations?: Record<string, string>;
  createdAt?: string;
  deletionTimestamp?: string;
}): object {
  const created = o.createdAt ?? '2026-11-29T10:00:00Z';
  return {
    metadata: {
      name: o.name,
      namespace: o.namespace ?? 'default',
      uid: o.uid,
      resourceVersion: '1001',
      creationTimestamp: created,
      ...(o.deletionTimestamp ? { deletionTimestamp: o.deletionTimestamp, deletionGracePeriodSeconds: 30 } : {}),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: {
      nodeName: o.nodeName,
      containers: (o.containers ?? []).map((c) => ({ name: c.name, image: 'registry.k8s.io/pause:3.9' })),
      restartPolicy: 'Always',
    },
    status: {
      phase: o.phase ?? 'Running',
      hostIP: '10.0.2.15',
      podIP: '10.88.0.5',
      startTime: created,
      containerStatuses: (o.containers ?? []).map((c) => ({
        name: c.name,
        ready: c.state === 'running',
        restartCount: c.restartCount ?? 0,
        image: 'registry.k8s.io/pause:3.9',
        imageID: 'registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097',
        started: c.state === 'running',
        ...(c.id ? { containerID: `containerd://${c.id}` } : {}),
        state:
          c.state === 'running'
            ? { running: { startedAt: created } }
            : c.state === 'waiting'
              ? { waiting: { reason: c.reason ?? 'CrashLoopBackOff', message: 'back-off 5m0s restarting failed container' } }
              : { terminated: { exitCode: 0, reason: c.reason ?? 'Completed', startedAt: created, finishedAt: created, ...(c.id ? { containerID: `containerd://${c.id}` } : {}) } },
      })),
    },
  };
}
