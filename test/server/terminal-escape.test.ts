/**
 * Text answers are read on terminals, and a terminal obeys the control characters in
 * what it prints. Through the real HTTP server (the app listening on loopback, fetched
 * over a socket), every text rendering that carries what the node's tenants wrote gets
 * it with its controls made visible: a process command line that erases its own row
 * and the header, retitles the window and hides itself; kernel, journal, /var/log and
 * container log lines with screen-clearing sequences, C1 controls and bidi overrides;
 * and a triage finding quoting a kubelet answer that clears the screen and says
 * "all clear". The JSON forms keep the text exactly as the node holds it.
 */
import http from 'node:http';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { BOOTS, kubelet, writeJournal } from '../fixtures/journal/gen.js';
import { OOM_CHILD_ID, realNodeSpec, tempHostRoot } from '../fixtures/node-tree.js';
import { LOG_DIR, line, writePodLogs } from '../fixtures/podlogs.js';
import { testApp } from '../helpers/app.js';

// the observed shape: erase this row, up one, erase the header, up one, set the window
// title (OSC … BEL), then conceal everything after it
const HIDE = '\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b]0;title\x07\x1b[8m';
const HIDE_SHOWN = '\\x1b[2K\\x1b[1A\\x1b[2K\\x1b[1A\\x1b]0;title\\x07\\x1b[8m';
const CLEAR = '\x1b[2J\x1b[H all clear';
const CLEAR_SHOWN = '\\x1b[2J\\x1b[H all clear';
// what must never reach a terminal: C0 but the newline between lines, DEL, C1, bidi controls
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/u;

const spec = realNodeSpec('systemd');
const sleeper = spec.procs!.find((p) => p.pid === 903)!;
sleeper.cmdline = ['sleep', '3600', HIDE, 'hidden'];
const host = tempHostRoot(spec);
t.teardown(host.cleanup);
const root = host.root;

// the kernel log as /dev/kmsg gives it: control bytes arrive escaped as \xNN, the reader unescapes them
const kmsg = path.join(root, 'dev/kmsg');
mkdirSync(path.dirname(kmsg), { recursive: true });
writeFileSync(kmsg, ['6,1,1000,-;Linux version 6.1.0', '4,2,2000,-;\\x1b[2J\\x1b[H all clear \\xc2\\x9b2J \\xe2\\x80\\xaeevil'].join('\n') + '\n');

// a journal record of this boot whose MESSAGE holds the sequences (the export format's binary form)
const boot = BOOTS.length - 1;
const b = BOOTS[boot]!;
mkdirSync(path.join(root, 'proc/sys/kernel/random'), { recursive: true });
writeFileSync(path.join(root, 'proc/sys/kernel/random/boot_id'), `${b.slice(0, 8)}-${b.slice(8, 12)}-${b.slice(12, 16)}-${b.slice(16, 20)}-${b.slice(20)}\n`);
await writeJournal(path.join(root, 'var/log/journal'), 'system', [
  kubelet({ boot, monoUs: 5_000_000, severity: 'I', text: 'starting' }),
  kubelet({ boot, monoUs: 6_000_000, severity: 'E', text: `${CLEAR}\r\nI0101 forged line \u009b31m\u202eevil` }),
]);

// a file under /var/log and a container's CRI log, both written by tenants
writeFileSync(path.join(root, 'var/log/tenant.log'), `ok\n${CLEAR}\tend\rforged\n`);
writePodLogs(root);
appendFileSync(path.join(root, LOG_DIR, '1.log'), line(400, 'stdout', 'F', `${CLEAR} \u009b2J \x7f\u2066x\u2069`));

// kubelet's health endpoint answering 500 with a body that clears the screen
const kubeletServer = http.createServer((_req, res) => {
  res.writeHead(500, { 'content-type': 'text/plain' });
  res.end(CLEAR);
});
await new Promise<void>((resolve) => kubeletServer.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => kubeletServer.close(() => resolve())));

const ta = await testApp([
  '--host-root', root,
  '--kmsg-path', kmsg,
  '--kubelet-healthz', `http://127.0.0.1:${(kubeletServer.address() as AddressInfo).port}/healthz`,
]);
t.teardown(() => ta.close());
await ta.app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(ta.app.server.address() as AddressInfo).port}`;

async function text(t: Test, url: string): Promise<string> {
  const res = await fetch(`${base}${url}`);
  const body = await res.text();
  t.equal(res.status, 200, res.status === 200 ? url : `${url}: ${body.slice(0, 300)}`);
  t.match(res.headers.get('content-type'), /^text\/plain/);
  const raw = RAW_CONTROL.exec(body);
  t.equal(raw, null, `${url}: no raw control character${raw ? ` (U+${raw[0].charCodeAt(0).toString(16).padStart(4, '0')} at ${raw.index})` : ''}`);
  return body;
}

t.test('a command line that erases its row and the header shows its escapes in ?format=text', async (t) => {
  const json = (await (await fetch(`${base}/v1/containers/${OOM_CHILD_ID.slice(0, 8)}/processes`)).json()) as { items: Array<{ pid: number; cmdline: string[] }> };
  t.same(json.items.find((p) => p.pid === 903)?.cmdline, ['sleep', '3600', HIDE, 'hidden'], 'JSON keeps the argument as it is');
  const body = await text(t, `/v1/containers/${OOM_CHILD_ID.slice(0, 8)}/processes?format=text`);
  const lines = body.split('\n');
  t.match(lines[0], /^PID\s+PPID\s+STATE\s+RSS\s+THREADS\s+COMM\s+CMDLINE$/, 'the header is intact');
  t.match(lines[1], /^903\s+844\s+S\s+4KiB\s+1\s+sleep\s+sleep 3600 /, 'the row starts as it should');
  t.ok(lines[1]!.endsWith(`sleep 3600 ${HIDE_SHOWN} hidden`), 'the row is one line, its escapes visible');
  t.equal(lines.length, 3, 'header, one row, the final newline');
});

t.test('a table cell writes tab, newline and carriage return as escapes: a row stays one line', async (t) => {
  const { renderTable } = await import('../../src/server/table.js');
  t.equal(renderTable({ columns: ['A', 'B'], rows: [['x\ty', 'a\nb\rc\u202ed']] }), 'A      B\nx\\ty   a\\nb\\rc\\u202ed\n');
});

t.test('kernel log lines: the escaped bytes kmsg gave are shown escaped again, never sent raw', async (t) => {
  const json = (await (await fetch(`${base}/v1/kernel`)).json()) as { records: Array<{ text: string }> };
  t.ok(json.records.some((r) => r.text.startsWith(CLEAR)), 'JSON holds the unescaped text');
  const body = await text(t, '/v1/kernel?format=text');
  t.match(body, `] ${CLEAR_SHOWN} \\u009b2J \\u202eevil\n`);
});

t.test('journal records: one line each, the sequences and the forged CRLF line visible', async (t) => {
  const body = await text(t, '/v1/logs?query=kubelet&format=text');
  const lines = body.trimEnd().split('\n');
  t.equal(lines.length, 2, 'two records, two lines: the CRLF inside a message forges no record');
  t.match(lines[1], `${CLEAR_SHOWN}\\r\\nI0101 forged line \\u009b31m\\u202eevil`);
  t.match(lines[1], /^\S+ kubelet\[\d+\]: E\d{4} /);
});

t.test('a file under /var/log: its lines escaped', async (t) => {
  const body = await text(t, '/v1/logs?query=/var/log/tenant.log&format=text');
  t.equal(body, `ok\n${CLEAR_SHOWN}\\tend\\rforged\n`);
});

t.test("a container's log: its lines escaped, with and without timestamps", async (t) => {
  const body = await text(t, `/v1/containers/${OOM_CHILD_ID.slice(0, 12)}/logs?tailLines=1&format=text`);
  t.equal(body, `${CLEAR_SHOWN} \\u009b2J \\x7f\\u2066x\\u2069\n`);
  const stamped = await text(t, `/v1/containers/${OOM_CHILD_ID.slice(0, 12)}/logs?tailLines=1&timestamps=true&format=text`);
  t.match(stamped, /^2026-11-29T17:06:40\.123456789Z \\x1b\[2J/);
});

t.test('triage: a kubelet answer that clears the screen and says "all clear" is quoted escaped', async (t) => {
  const json = (await (await fetch(`${base}/v1/triage?window=1s`)).json()) as { findings: Array<{ id: string; detail: string }> };
  const f = json.findings.find((x) => x.id === 'kubelet-unhealthy');
  t.ok(f?.detail.includes(CLEAR), 'the finding quotes the body');
  const body = await text(t, '/v1/triage?window=1s&format=text');
  t.match(body, `HTTP 500: ${CLEAR_SHOWN}`);
});

t.test('a triage report as a bundle stores it: every field escaped, only the colours are controls', async (t) => {
  const { renderText } = await import('../../src/triage/report.js');
  const stored = {
    node: `node-1${CLEAR}`,
    takenAt: '2026-12-01T00:00:00Z',
    windowMs: 2000,
    verdict: 'critical',
    counts: { critical: 1, warning: 0, info: 0 },
    sources: { [`kmsg${CLEAR}`]: { ok: false, durationMs: 1, error: 'x' } },
    warnings: [CLEAR],
    findings: [
      {
        id: `x${CLEAR}`,
        severity: 'critical',
        title: CLEAR,
        detail: `\u009b2J\u009bH all clear`,
        evidence: [{ source: 'kmsg', path: `/p${CLEAR}`, call: CLEAR, cursor: CLEAR, seq: 1, excerpt: `${CLEAR}\n\u202eevil\rx` }],
        hint: CLEAR,
      },
    ],
  } as unknown as Parameters<typeof renderText>[0];
  const plain = renderText(stored);
  t.equal(RAW_CONTROL.exec(plain), null, 'no raw control without colour');
  t.match(plain, `nodetruth triage of node-1${CLEAR_SHOWN} at`);
  t.match(plain, `\\u009b2J\\u009bH all clear`);
  t.match(plain, `           \\u202eevil\\rx\n`, 'an excerpt keeps its lines, each escaped');
  const coloured = renderText(stored, { color: true });
  // eslint-disable-next-line no-control-regex
  const withoutColours = coloured.replace(/\x1b\[[0-9;]*m/g, '');
  t.equal(RAW_CONTROL.exec(withoutColours), null, 'with colour, the only controls are the colours renderText adds');
  t.equal(withoutColours, plain);
});
