/**
 * One GET of the Kubernetes API with its JSON answer bounded in bytes: client-node reads a
 * whole body whatever its size, and a list of tenant-written objects (Events) may be large.
 * The connection, TLS and credentials are client-node's own (KubeConfig.applyToHTTPSOptions),
 * so this reaches the API server exactly as every other call does. Failures are SourceErrors
 * with the codes api.ts gives (no_cluster_access for 401/403, api_server_error,
 * api_server_unreachable, api_server_timeout); no header or credential is ever in a message.
 */
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { SourceError } from '../errors.js';

/** A Status body's message is cut to this many characters in an error. */
const STATUS_CHARS = 300;

interface BoundedGet {
  kc: KubeConfig;
  /** the cluster's server URL, with any path prefix it has */
  server: string;
  /** what the call is, for messages: "list events" */
  what: string;
  /** the path and query under the server URL: /api/v1/events?fieldSelector=... */
  path: string;
  signal: AbortSignal;
  /** the answer's bytes at most; more fails the call */
  maxBytes: number;
  /** for the timeout message */
  timeoutMs: number;
}

export async function getJson(o: BoundedGet): Promise<unknown> {
  const opts: https.RequestOptions = { headers: {} };
  await o.kc.applyToHTTPSOptions(opts);
  const url = new URL(o.server.replace(/\/+$/, '') + o.path);
  const lib = url.protocol === 'http:' ? http : https;
  let body: Buffer;
  let code: number;
  try {
    ({ code, body } = await new Promise<{ code: number; body: Buffer }>((resolve, reject) => {
      const req = lib.request(url, { ...opts, method: 'GET', headers: { ...opts.headers, accept: 'application/json' }, signal: o.signal }, (res) => {
        const chunks: Buffer[] = [];
        let n = 0;
        res.on('data', (c: Buffer) => {
          n += c.length;
          if (n > o.maxBytes) {
            req.destroy(new SourceError('api_server_error', `Kubernetes API server ${o.server} (${o.what}): the answer passed ${o.maxBytes} bytes; not read further`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    }));
  } catch (err) {
    if (err instanceof SourceError) throw err;
    if (o.signal.aborted) throw new SourceError('api_server_timeout', `Kubernetes API server ${o.server} did not answer ${o.what} within ${o.timeoutMs} ms`);
    const e = err as NodeJS.ErrnoException;
    throw new SourceError('api_server_unreachable', `cannot reach the Kubernetes API server ${o.server} (${o.what}): ${e.code ?? e.message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    parsed = null;
  }
  if (code >= 200 && code < 300) {
    if (parsed === null || typeof parsed !== 'object') throw new SourceError('api_server_error', `Kubernetes API server ${o.server} (${o.what}): ${code} with a body that is not a JSON object`);
    return parsed;
  }
  const msg = parsed && typeof parsed === 'object' && typeof (parsed as { message?: unknown }).message === 'string' ? ` ${(parsed as { message: string }).message.slice(0, STATUS_CHARS)}` : '';
  if (code === 401 || code === 403) throw new SourceError('no_cluster_access', `Kubernetes API server ${o.server} refused nodetruth's credentials: ${o.what}: ${code}${msg}`);
  throw new SourceError('api_server_error', `Kubernetes API server ${o.server}: ${o.what}: ${code}${msg}`);
}
