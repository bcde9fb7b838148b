// Fills the conntrack table of the guest's own network namespace (guest/faults.sh
// conntrack-fill): a listener on 127.0.0.1 and up to ATTEMPTS connections to it, opened
// one after the other and held open (an established TCP connection is an "assured"
// conntrack entry, which the kernel never drops early to make room). Once the table is
// full the kernel drops each new SYN ("nf_conntrack: table full, dropping packet") and
// the connect times out; after a few of those in a row it writes what it got to OUT as
// JSON, and holds the connections until it is stopped, trying one more each second.
// Runs with the guest's Node 24, which strips the types: erasable TypeScript only.
import { writeFileSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';

const attempts = Number(process.argv[2] ?? 200);
const out = process.argv[3] ?? '/share/conntrack-fill.json';
const PORT = 7999;
/** a dropped SYN is sent again after 1 s: one retry, then it counts as dropped */
const CONNECT_TIMEOUT_MS = 1500;
const GIVE_UP_AFTER = 3;

const held: Socket[] = [];
const server = createServer((s) => {
  held.push(s);
  s.on('error', () => undefined);
});
await new Promise<void>((res) => server.listen(PORT, '127.0.0.1', () => res()));

function open(): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ port: PORT, host: '127.0.0.1' });
    const timer = setTimeout(() => {
      s.destroy();
      res(false);
    }, CONNECT_TIMEOUT_MS);
    s.once('connect', () => {
      clearTimeout(timer);
      held.push(s);
      res(true);
    });
    s.once('error', () => {
      clearTimeout(timer);
      res(false);
    });
  });
}

let connected = 0;
let dropped = 0;
let inARow = 0;
const t0 = Date.now();
for (let i = 0; i < attempts && inARow < GIVE_UP_AFTER; i++) {
  if (await open()) {
    connected++;
    inARow = 0;
  } else {
    dropped++;
    inARow++;
  }
}
writeFileSync(out, JSON.stringify({ connected, dropped, attempts, ms: Date.now() - t0 }) + '\n');
// Hold them until systemctl stop (SIGTERM ends the process and with it every socket), and
// take each slot other entries leave as they expire: on bookworm's cluster node 50 of 100
// were the node's own short-lived entries, and the table was no longer full minutes later.
let refilling = false;
setInterval(() => {
  if (refilling || held.length >= 2 * attempts) return;
  refilling = true;
  void open().finally(() => {
    refilling = false;
  });
}, 1000);
