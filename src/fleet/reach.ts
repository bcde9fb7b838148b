/**
 * Reaching one node's agent: `kubectl port-forward pod/<agent> :<agent-port>` with the
 * caller's kubeconfig (the API server authenticates and authorizes the caller for
 * pods/portforward and audits the session under the caller's name), then one HTTPS GET
 * through it carrying the caller's bearer token, which the agent checks itself
 * (TokenReview + SubjectAccessReview). Each forward is a child process ended by its PID
 * when the node is done, cut at its deadline, or the run is stopped.
 */
import { createWriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import https from 'node:https';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { run, running, type Proc } from '../launcher/kubectl.js';
import type { Target } from './targets.js';

const FORWARDING = /^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)$/m;

/** The largest answer read into memory (a triage report is far below it); bundles stream to a file. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

export interface ReachOptions {
  globalArgs: string[];
  /** the agent pods' namespace: kubectl port-forward looks the pod up there, not in the context's */
  namespace: string;
  agentPort: number;
  ca: string | null;
  token: string;
  /** a child started (its PID) and ended: how the run ends every one of them */
  track: (p: Proc) => () => void;
}

export interface Answer {
  status: number;
  contentType: string;
  /** the body (when not written to a file) */
  body: string;
  bytes: number;
}

export class NodeError extends Error {}

/** Ends a forward by its PID and waits for it to go. */
export async function endProc(p: Proc): Promise<void> {
  if (running(p)) {
    p.child.kill('SIGTERM');
    const t = setTimeout(() => running(p) && p.child.kill('SIGKILL'), 3000);
    await p.exited;
    clearTimeout(t);
  }
}

/** GET `path` on the target's agent; `toFile`: stream the body there instead. Aborted by `signal`. */
export async function reach(t: Target, path: string, o: ReachOptions, signal: AbortSignal, toFile?: string): Promise<Answer> {
  let ready: (port: number) => void = () => {};
  const listening = new Promise<number>((resolve) => (ready = resolve));
  const forward = run([...o.globalArgs, 'port-forward', `--namespace=${o.namespace}`, `pod/${t.pod!}`, `:${o.agentPort}`, '--address=127.0.0.1'], {
    passStderr: null,
    onStdout: (all) => {
      const m = FORWARDING.exec(all);
      if (m) ready(Number(m[1]));
    },
  });
  const untrack = o.track(forward);
  try {
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(new NodeError(String((signal.reason as Error)?.message ?? signal.reason)));
      if (signal.aborted) fail();
      else signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => {});
    const port = await Promise.race([
      listening,
      aborted,
      forward.exited.then((r) => {
        throw new NodeError(`kubectl port-forward exited with ${r.code ?? r.signal}: ${forward.stderr.trim().slice(-300) || '(nothing said)'}`);
      }),
    ]);
    const written = { file: false };
    try {
      return await Promise.race([get(port, path, agentTls(t, o), signal, toFile, written), aborted]);
    } catch (err) {
      // a bundle cut short is not left beside the whole ones
      if (written.file && toFile) await unlink(toFile).catch(() => {});
      throw err;
    }
  } finally {
    untrack();
    await endProc(forward);
  }
}

/** How a request reaches the agent through the forward: the module, its request options and headers. */
interface Via {
  get: typeof https.get;
  options: https.RequestOptions;
}

/** The DaemonSet's agent: TLS, the caller's token, the certificate checked against --agent-ca. */
function agentTls(t: Target, o: ReachOptions): Via {
  return {
    get: https.get,
    options: {
      headers: { authorization: `Bearer ${o.token}`, accept: 'application/json', host: t.hostIP ?? t.node },
      ...(o.ca
        ? {
            ca: o.ca,
            rejectUnauthorized: true,
            // the agent's certificate names the node's IP (and name): through the forward the address is 127.0.0.1
            checkServerIdentity: (_host: string, cert: PeerCertificate) => {
              const byIp = t.hostIP ? checkServerIdentity(t.hostIP, cert) : new Error('no host IP');
              return byIp ? checkServerIdentity(t.node, cert) : undefined;
            },
          }
        : { rejectUnauthorized: false }),
    },
  };
}

/** GET `path` on 127.0.0.1:`port` as `via` says; the body read (bounded) or streamed to `toFile`. */
export function get(port: number, path: string, via: Via, signal: AbortSignal, toFile: string | undefined, written: { file: boolean }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = via.get(
      { ...via.options, host: '127.0.0.1', port, path, agent: false, signal },
      (res) => {
        const status = res.statusCode ?? 0;
        const contentType = String(res.headers['content-type'] ?? '');
        let bytes = 0;
        if (toFile && status === 200) {
          const out = createWriteStream(toFile, { flags: 'wx' });
          out.once('open', () => (written.file = true));
          signal.addEventListener('abort', () => out.destroy(), { once: true });
          res.on('data', (c: Buffer) => (bytes += c.length));
          res.pipe(out);
          out.on('error', (e) => reject(new NodeError(`cannot write ${toFile}: ${e.message}`)));
          res.on('error', (e) => reject(new NodeError(`answer cut: ${e.message}`)));
          out.on('finish', () => resolve({ status, contentType, body: '', bytes }));
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (bytes > MAX_ANSWER_BYTES) return void req.destroy(new NodeError(`answer larger than ${MAX_ANSWER_BYTES} bytes`));
          chunks.push(c);
        });
        res.on('end', () => resolve({ status, contentType, body: Buffer.concat(chunks).toString('utf8'), bytes }));
        res.on('error', (e) => reject(e instanceof NodeError ? e : new NodeError(`answer cut: ${e.message}`)));
      },
    );
    req.on('error', (e) => reject(e instanceof NodeError ? e : new NodeError(`${(e as NodeJS.ErrnoException).code ?? ''} ${e.message}`.trim())));
  });
}
