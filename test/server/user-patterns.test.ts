// A user pattern against tenant-controlled text must not pin
// the agent. Through the real HTTP server: /v1/kernel (a regular file read as
// kmsg, one record per line) and a file query of /v1/logs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { testApp } from '../helpers/app.js';

const root = mkdtempSync(path.join(tmpdir(), 'nodetruth-patterns-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

const run = 'a'.repeat(100_000);
// a line that defeats re2js's DFA for the pattern below: each costs the worker a good fraction of a second
let slow = '';
// pseudo-random (an LCG): a periodic text would let the DFA settle into a few states
for (let i = 0, x = 12345; i < 60_000; i++) {
  x = (x * 1103515245 + 12345) >>> 0;
  slow += x & 0x10000 ? 'a' : 'X';
}
slow += 'X';
// distinct per test: a worker caches compiled patterns, and a warm DFA is fast
const slowPattern = (n: number) => `.*a.{${n}}q`;

const kmsg = path.join(root, 'kmsg');
writeFileSync(
  kmsg,
  // from seq 0: the ring lost nothing, so no journal fallback is asked for
  [`6,0,50,-;boot`, `6,1,100,-;hello`, `6,2,200,-;${run}`, `6,3,300,-;aaab`, `4,4,400,-;Ümlaut ünd`, ...[5, 6, 7, 8].map((s) => `6,${s},${s}00,-;${slow}`), `6,9,900,-;world`].join('\n') + '\n',
);
mkdirSync(path.join(root, 'var/log/tenant'), { recursive: true });
writeFileSync(path.join(root, 'var/log/tenant/app.log'), ['start', run, 'aaab', 'ERROR one', ...[1, 2, 3, 4].map(() => slow), 'error two', 'end'].join('\n') + '\n');

const ta = await testApp(['--host-root', root, '--kmsg-path', kmsg]);
t.teardown(() => ta.close());
await ta.app.listen({ port: 0, host: '127.0.0.1' });
const port = (ta.app.server.address() as AddressInfo).port;

interface Res {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  at: number;
}
let seq = 0;
const get = (url: string) =>
  new Promise<Res>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: url }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), at: ++seq }));
      })
      .on('error', reject);
  });

t.test('/v1/kernel?pattern=(a+)+$ on a 100k-a record: 200 with the right records, /healthz answers meanwhile', async (t) => {
  const [k, h] = await Promise.all([get('/v1/kernel?pattern=(a%2B)%2B%24'), get('/healthz')]);
  t.equal(h.status, 200);
  t.equal(k.status, 200, JSON.stringify(k.body).slice(0, 300));
  // record 2 is all a; 3 ends in b; the slow records end in X
  t.same(k.body.records.map((r: { seq: number }) => r.seq), [2]);
  t.equal(k.body.records[0].text.length, 100_000, 'the record is returned whole');
  t.match(k.body.warnings.join('\n'), /1 item\(s\) longer than 65536 characters were matched over their first 65536 characters only/);
});

t.test('a pattern that is slow on the records runs off the event loop: /healthz answers while it runs', async (t) => {
  const slowReq = get(`/v1/kernel?pattern=${encodeURIComponent(slowPattern(400))}`);
  await new Promise((r) => setTimeout(r, 50)); // the request is in: its records are being matched
  const h = await get('/healthz');
  const k = await slowReq;
  t.equal(h.status, 200);
  t.ok(h.at < k.at, '/healthz answered before the slow search finished');
  t.equal(k.status, 200);
  t.same(k.body.records, [], 'no record has a q 400 characters after an a');
});

t.test('/v1/kernel: smart case, unicode, tail from the newest', async (t) => {
  t.same((await get('/v1/kernel?pattern=HELLO')).body.records, []);
  t.same((await get('/v1/kernel?pattern=hello')).body.records.map((r: { seq: number }) => r.seq), [1]);
  t.same((await get(`/v1/kernel?pattern=${encodeURIComponent('ümlaut')}`)).body.records.map((r: { seq: number }) => r.seq), [4], 'ü folds to Ü');
  t.same((await get(`/v1/kernel?pattern=${encodeURIComponent('(?-i)^\\p{Lu}mlaut')}`)).body.records.map((r: { seq: number }) => r.seq), [4], 'letters of escapes do not count for smart case; (?-i) asks for case');
  t.same((await get('/v1/kernel?pattern=o&tailLines=2')).body.records.map((r: { seq: number }) => r.seq), [1, 9]);
  t.same((await get('/v1/kernel?pattern=o')).body.records.map((r: { seq: number }) => r.seq), [0, 1, 9]);
});

t.test('/v1/logs file query: the same hostile line and pattern', async (t) => {
  const [f, h] = await Promise.all([get('/v1/logs?query=tenant/app.log&pattern=(a%2B)%2B%24'), get('/healthz')]);
  t.equal(h.status, 200);
  t.equal(f.status, 200, JSON.stringify(f.body).slice(0, 300));
  // a file line keeps its first 65,536 characters (JOURNAL_LIMITS.maxFileLineChars) and says what was cut
  t.same(f.body.lines, [`${'a'.repeat(65_536)} [34464 characters cut]`]);
  t.match(f.body.warnings.join('\n'), /1 line\(s\) longer than 65536 characters: their first 65536 kept/);
  t.match(f.body.warnings.join('\n'), /matched over their first 65536 characters only/);
  const tail = await get('/v1/logs?query=tenant/app.log&pattern=error&tailLines=1');
  t.same(tail.body.lines, ['error two']);
  t.same((await get('/v1/logs?query=tenant/app.log&pattern=ERROR')).body.lines, ['ERROR one']);

  const slowReq = get(`/v1/logs?query=tenant/app.log&pattern=${encodeURIComponent(slowPattern(401))}`);
  await new Promise((r) => setTimeout(r, 50));
  const h2 = await get('/healthz');
  const s = await slowReq;
  t.equal(h2.status, 200);
  t.ok(h2.at < s.at, '/healthz answered before the slow search finished');
  t.equal(s.status, 200);
  t.same(s.body.lines, []);
});

t.test('unsupported syntax is a 400 that names it and says RE2, on both routes', async (t) => {
  for (const base of ['/v1/kernel?', '/v1/logs?query=tenant/app.log&']) {
    const br = await get(`${base}pattern=${encodeURIComponent('(a)\\1')}`);
    t.equal(br.status, 400);
    t.match(br.body.detail, /backreferences .* not supported: the syntax is RE2/);
    const lb = await get(`${base}pattern=${encodeURIComponent('(?<=pid=)\\d+')}`);
    t.equal(lb.status, 400);
    t.match(lb.body.detail, /lookbehind .* not supported: the syntax is RE2/);
    const bad = await get(`${base}pattern=${encodeURIComponent('(')}`);
    t.equal(bad.status, 400);
    t.match(bad.body.detail, /RE2/);
  }
});
