/**
 * The API server's view, through @kubernetes/client-node 2.x: the pods bound to
 * this node, and the two reviews --auth kubernetes needs. Every call has a
 * deadline; failures become SourceErrors that say what went wrong
 * (no_cluster_access, api_server_unreachable, api_server_timeout, api_server_error).
 * No route knowledge here.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Client from '@kubernetes/client-node';
import type { KubeConfig, V1Pod, V1SubjectAccessReview, V1TokenReview } from '@kubernetes/client-node';
import { SourceError } from '../errors.js';

let clientModule: typeof Client | undefined;
/**
 * @kubernetes/client-node, loaded on first use: importing it costs ~0.5 s and
 * ~75 MiB, and only /v1/node/drift and --auth kubernetes need it (start-up
 * time and idle RSS). Node 24 loads this ESM package with require().
 */
function kubeClient(): typeof Client {
  // The sync fallback; callers on a request path await loadKubeClient() first, because a
  // synchronous require() of an ESM graph can stall behind asynchronous loader hooks
  // (seen once under the test runner's TypeScript hooks).
  clientModule ??= createRequire(import.meta.url)('@kubernetes/client-node') as typeof Client;
  return clientModule;
}

/** Load @kubernetes/client-node through the asynchronous loader (idempotent). */
export async function loadKubeClient(): Promise<void> {
  clientModule ??= (await import('@kubernetes/client-node')) as typeof Client;
}

/** Whether @kubernetes/client-node has been loaded in this process (tests of the no-access path). */
export const kubeClientLoaded = (): boolean => clientModule !== undefined;

/** Where a pod's service account token is mounted (client-node's loadFromCluster reads it there). */
const SERVICEACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Deadline of one API call, and of a whole paged pod list. */
const KUBE_TIMEOUT_MS = 5000;
/** Page size of the pod list; a node runs at most a few hundred pods. */
const POD_PAGE = 500;
/** Pages followed at most (POD_PAGE each): a bound, not an expected size. */
const MAX_PAGES = 20;

interface KubeAccessOptions {
  /** --kubeconfig / $KUBECONFIG; null: in-cluster */
  kubeconfig: string | null;
  env?: NodeJS.ProcessEnv;
  /** where the service account token is looked for (tests) */
  tokenPath?: string;
  timeoutMs?: number;
}

/**
 * How nodetruth reaches the API server: an explicit kubeconfig when one was
 * given (--kubeconfig or $KUBECONFIG), else the pod's own service account
 * (in-cluster). `reason` says why there is no access.
 */
export type KubeAccess = { ok: true; api: KubeApi; source: string } | { ok: false; reason: string };

/**
 * Whether there is any cluster access to load, from the file system and the
 * environment alone: it never touches @kubernetes/client-node, whose first load
 * takes 62–86 s in the node VM (qemu TCG), so a node without access
 * answers its 503 at once.
 */
export function precheckKubeAccess(o: KubeAccessOptions): { ok: true; kind: 'kubeconfig' | 'in-cluster' } | { ok: false; reason: string } {
  const env = o.env ?? process.env;
  if (o.kubeconfig) {
    return existsSync(o.kubeconfig) ? { ok: true, kind: 'kubeconfig' } : { ok: false, reason: `kubeconfig ${o.kubeconfig} does not exist` };
  }
  if (!env.KUBERNETES_SERVICE_HOST || !env.KUBERNETES_SERVICE_PORT) {
    return {
      ok: false,
      reason: 'no cluster access: not running in a pod with a service account token (KUBERNETES_SERVICE_HOST unset) and no --kubeconfig or $KUBECONFIG given',
    };
  }
  const tokenPath = o.tokenPath ?? SERVICEACCOUNT_TOKEN;
  if (!existsSync(tokenPath)) {
    return { ok: false, reason: `no cluster access: KUBERNETES_SERVICE_HOST is set but there is no service account token at ${tokenPath} (automountServiceAccountToken off?) and no --kubeconfig or $KUBECONFIG given` };
  }
  return { ok: true, kind: 'in-cluster' };
}

export function loadKubeAccess(o: KubeAccessOptions): KubeAccess {
  const pre = precheckKubeAccess(o);
  if (!pre.ok) return pre;
  const kc = new (kubeClient().KubeConfig)();
  let source: string;
  try {
    if (pre.kind === 'kubeconfig') {
      kc.loadFromFile(o.kubeconfig!);
      source = `kubeconfig ${o.kubeconfig} (context ${kc.getCurrentContext() || 'none'})`;
    } else {
      kc.loadFromCluster();
      source = 'in-cluster service account';
    }
  } catch (err) {
    return { ok: false, reason: `cannot load cluster credentials: ${(err as Error).message}` };
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) return { ok: false, reason: `${source}: no current cluster` };
  if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) {
    return { ok: false, reason: `${source}: server ${cluster.server} is plain http, which client-node only accepts with insecure-skip-tls-verify` };
  }
  return { ok: true, api: new KubeApi(kc, cluster.server, o.timeoutMs ?? KUBE_TIMEOUT_MS), source };
}

interface ReviewedUser {
  username: string;
  uid: string;
  groups: string[];
  extra: Record<string, string[]>;
}

type TokenReviewResult = { authenticated: true; user: ReviewedUser; audiences: string[] } | { authenticated: false; error: string };

export interface AccessCheck {
  verb: string;
  resource: string;
  subresource: string;
  name: string;
}

interface AccessResult {
  allowed: boolean;
  denied: boolean;
  reason: string;
}

export class KubeApi {
  private readonly core: Client.CoreV1Api;
  private readonly authn: Client.AuthenticationV1Api;
  private readonly authz: Client.AuthorizationV1Api;

  constructor(
    /** the credentials and TLS of every call, bounded GETs included (get.ts) */
    readonly kc: KubeConfig,
    readonly server: string,
    readonly timeoutMs: number,
  ) {
    const k = kubeClient();
    this.core = kc.makeApiClient(k.CoreV1Api);
    this.authn = kc.makeApiClient(k.AuthenticationV1Api);
    this.authz = kc.makeApiClient(k.AuthorizationV1Api);
  }

  /** Pods with spec.nodeName=<node>, all namespaces, following `continue` pages within one deadline. */
  async podsOnNode(nodeName: string): Promise<V1Pod[]> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    const fieldSelector = `spec.nodeName=${nodeName}`;
    const pods: V1Pod[] = [];
    let cont: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const list = await this.call('list pods', signal, (o) =>
        this.core.listPodForAllNamespaces({ fieldSelector, limit: POD_PAGE, ...(cont ? { _continue: cont } : {}) }, o),
      );
      pods.push(...list.items);
      cont = list.metadata?._continue || undefined;
      if (!cont) return pods;
    }
    throw new SourceError('api_server_error', `list pods: more than ${MAX_PAGES * POD_PAGE} pods bound to ${nodeName}; refusing to page further`);
  }

  async tokenReview(token: string, audiences: string[]): Promise<TokenReviewResult> {
    const body: V1TokenReview = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token, ...(audiences.length > 0 ? { audiences } : {}) },
    };
    const signal = AbortSignal.timeout(this.timeoutMs);
    // A failure here must never carry the token: messages are rebuilt, not passed through.
    const res = await this.call('TokenReview', signal, (o) => this.authn.createTokenReview({ body }, o), token);
    const s = res.status;
    if (!s?.authenticated || !s.user?.username) return { authenticated: false, error: scrub(s?.error || 'token not authenticated', token) };
    const got = s.audiences ?? [];
    // The API server answers with the audiences the token is valid for; a client must check them.
    if (audiences.length > 0 && !got.some((a) => audiences.includes(a))) {
      return { authenticated: false, error: `token is not valid for audiences ${audiences.join(', ')}` };
    }
    return {
      authenticated: true,
      user: { username: s.user.username, uid: s.user.uid ?? '', groups: s.user.groups ?? [], extra: s.user.extra ?? {} },
      audiences: got,
    };
  }

  async subjectAccessReview(user: ReviewedUser, check: AccessCheck): Promise<AccessResult> {
    const body: V1SubjectAccessReview = {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: user.username,
        uid: user.uid || undefined,
        groups: user.groups,
        extra: user.extra,
        resourceAttributes: {
          verb: check.verb,
          resource: check.resource,
          ...(check.subresource ? { subresource: check.subresource } : {}),
          name: check.name,
        },
      },
    } as V1SubjectAccessReview;
    const signal = AbortSignal.timeout(this.timeoutMs);
    const res = await this.call('SubjectAccessReview', signal, (o) => this.authz.createSubjectAccessReview({ body }, o));
    const s = res.status;
    return { allowed: Boolean(s?.allowed), denied: Boolean(s?.denied), reason: s?.reason || s?.evaluationError || '' };
  }

  private async call<T>(what: string, signal: AbortSignal, fn: (options: object) => Promise<T>, secret?: string): Promise<T> {
    // client-node's middleware hook is the one place to hand fetch an AbortSignal. The
    // object-parameter APIs take observable middleware: anything with toPromise().
    const resolved = <C>(c: C) => ({ toPromise: () => Promise.resolve(c) });
    const options = {
      middleware: [{ pre: (ctx: { setSignal(s: AbortSignal): void }) => (ctx.setSignal(signal), resolved(ctx)), post: resolved }],
      middlewareMergeStrategy: 'append',
    };
    try {
      return await fn(options);
    } catch (err) {
      throw this.toSourceError(what, err, signal, secret);
    }
  }

  private toSourceError(what: string, err: unknown, signal: AbortSignal, secret?: string): SourceError {
    if (signal.aborted) return new SourceError('api_server_timeout', `Kubernetes API server ${this.server} did not answer ${what} within ${this.timeoutMs} ms`);
    if (err instanceof kubeClient().ApiException) {
      const code = err.code;
      const status = statusMessage(err.body);
      const detail = scrub(`${what}: ${code}${status ? ` ${status}` : ''}`, secret);
      if (code === 401 || code === 403) return new SourceError('no_cluster_access', `Kubernetes API server ${this.server} refused nodetruth's credentials: ${detail}`);
      return new SourceError('api_server_error', `Kubernetes API server ${this.server}: ${detail}`);
    }
    return new SourceError('api_server_unreachable', scrub(`cannot reach the Kubernetes API server ${this.server} (${what}): ${causeOf(err)}`, secret));
  }
}

/** The `message` of a Kubernetes Status body, whatever shape client-node left it in. */
function statusMessage(body: unknown): string {
  let b = body;
  if (typeof body === 'string') {
    try {
      b = JSON.parse(body);
    } catch {
      return body.slice(0, 300);
    }
  }
  if (b && typeof b === 'object' && typeof (b as { message?: unknown }).message === 'string') return (b as { message: string }).message.slice(0, 300);
  return '';
}

function causeOf(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  if (e.cause?.code) return e.cause.code + (e.cause.message ? `: ${e.cause.message}` : '');
  return e.cause?.message ?? e.message ?? String(err);
}

/** Remove a secret from a text (an error message may echo a request body). */
function scrub(text: string, secret?: string): string {
  return secret && secret.length > 0 ? text.split(secret).join('<redacted>') : text;
}

/** Cluster access loaded on first use; a failure is retried on the next use (a kubeconfig may appear later). */
export function lazyKubeAccess(o: KubeAccessOptions): () => KubeAccess {
  let loaded: KubeAccess | null = null;
  return () => {
    if (loaded) return loaded;
    const a = loadKubeAccess(o);
    if (a.ok) loaded = a;
    return a;
  };
}
