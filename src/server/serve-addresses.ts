/**
 * `serve` on every --listen address with one server. The app's own server listens on the
 * first; each further address is a plain TCP listener that hands every accepted socket to
 * that server (`'connection'`, as Node documents for injecting connections). So every
 * address gets the same TLS, the same auth, Host check, timeouts and bounds, and the
 * server's close and closeAllConnections reach those sockets too: nothing is configured
 * twice and nothing differs between addresses except where the bytes came in.
 *
 * --max-connections bounds the connections of every address together: a further listener
 * closes a new connection at accept (no answer, as Node does on the app's own server) while
 * the server holds that many, and the app's own server is left room for only what the
 * further addresses do not hold.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { App } from './app.js';

interface ListenAddress {
  host: string;
  port: number;
}

export interface Listening {
  /** where each address is bound, in the order given (the real port for port 0) */
  addresses: ListenAddress[];
  /** Stop accepting on the further addresses; resolves when their sockets have ended (the app's close ends them). */
  close(): Promise<void>;
}

function listenOne(server: Server, a: ListenAddress): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen({ host: a.host, port: a.port, exclusive: true }, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

const bound = (s: { address(): AddressInfo | string | null }, a: ListenAddress): ListenAddress => {
  const info = s.address();
  return info && typeof info === 'object' ? { host: a.host, port: info.port } : a;
};

/** Listen on `addresses` (at least one); a failure on any of them closes the others and throws. */
export async function listenOnAll(app: App, addresses: readonly ListenAddress[], maxConnections: number): Promise<Listening> {
  const [first, ...more] = addresses;
  if (!first) throw new Error('listenOnAll: no address');
  await app.listen({ host: first.host, port: first.port });
  const extra: Server[] = [];
  // every connection the server holds, whichever address it came in on; those handed over
  const held = new Set<Socket>();
  const handed = new Set<Socket>();
  const room = () => (app.server.maxConnections = Math.max(0, maxConnections - handed.size));
  const onConnection = (socket: Socket) => {
    held.add(socket);
    socket.once('close', () => held.delete(socket));
  };
  const closeExtra = () =>
    Promise.all(
      extra.map(
        (s) =>
          new Promise<void>((resolve) => {
            if (!s.listening) return resolve();
            s.close(() => resolve());
          }),
      ),
    ).then(() => undefined);
  if (more.length) app.server.on('connection', onConnection);
  try {
    for (const a of more) {
      // handed over synchronously: the server's own socket handlers (and the count above) are the only ones, as on its own accepts
      const s = createServer((socket) => {
        if (held.size >= maxConnections) return void socket.destroy();
        handed.add(socket);
        room();
        socket.once('close', () => {
          handed.delete(socket);
          room();
        });
        app.server.emit('connection', socket);
      });
      s.maxConnections = maxConnections;
      // after listening, an accept error (EMFILE) is Node's to retry; it must not end the agent
      s.on('error', (err) => app.log.warn({ err: err.message, address: `${a.host}:${a.port}` }, 'listener error'));
      extra.push(s);
      await listenOne(s, a);
    }
  } catch (err) {
    await closeExtra();
    await app.close();
    throw err;
  }
  return {
    addresses: [bound(app.server, first), ...more.map((a, i) => bound(extra[i]!, a))],
    close: closeExtra,
  };
}
