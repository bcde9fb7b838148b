/**
 * 3b. The launcher's own listener on 127.0.0.1:--port: every request is passed to the
 * port-forward with the session's token added (X-Nodetruth-Session, see
 * src/server/plugins/session-secret.ts), so the printed curl lines, --get and --capture
 * work without the token ever being shown, and the agent refuses anyone else on the
 * node. A token the client sent itself is replaced. Bodies stream both ways (follow
 * streams, bundles); a client that goes away ends its upstream request, and an upstream
 * that fails answers 502 (or cuts the answer it had begun).
 *
 * The local port is as open as kubectl port-forward's own listener was: to local
 * processes of this machine. kubectl's forward itself listens on a random port, useless
 * without the token.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SESSION_HEADER } from '../server/plugins/session-secret.js';
import { StepFailed } from './session.js';

/** Hop-by-hop headers (RFC 9110 7.6.1): each side of the proxy has its own. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
  return out;
}

export interface SessionProxy {
  port: number;
  close(): void;
}

/** Listen on 127.0.0.1:`port` (0: any free one) and pass every request to 127.0.0.1:`target` with `token`. */
export async function sessionProxy(port: number, target: number, token: string): Promise<SessionProxy> {
  const upstream = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const server = http.createServer((req, res) => {
    const headers = endToEnd(req.headers);
    delete headers[SESSION_HEADER];
    headers[SESSION_HEADER] = token;
    const up = http.request({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers, agent: upstream }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    up.on('error', (err) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`nodetruth attach: the port-forward did not answer: ${err.message}\n`);
    });
    // the client went away before the answer ended: so does the upstream request
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  });
  server.headersTimeout = 15_000;
  server.requestTimeout = 0; // follow streams last as long as the client wants
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new StepFailed(err.code === 'EADDRINUSE' ? `127.0.0.1:${port} is in use; pass --port with another port, or --port 0 for any free one` : `cannot listen on 127.0.0.1:${port}: ${err.message}`)),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.close();
      server.closeAllConnections();
      upstream.destroy();
    },
  };
}
