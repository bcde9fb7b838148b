/**
 * `attach --get` prints answers to the user's terminal. Through a real HTTP server
 * answering as an agent might (a text body carrying a command line that erases rows
 * and retitles the window, a JSON body with C1 controls and bidi overrides that
 * JSON.stringify leaves raw, a problem answer), nothing printed holds a control
 * character but the line breaks, and a JSON answer is still the same JSON.
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { getPaths, printable } from '../../src/launcher/modes.js';
import { parseAttachArgs } from '../../src/launcher/options.js';
import { Session } from '../../src/launcher/session.js';

const HIDE = '\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b]0;title\x07\x1b[8m';
const JSON_VALUE = { items: [{ pid: 903, cmdline: ['sleep', `\u009b2J\u009bH all clear`, '\u202eevil', HIDE] }] };
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

const server = http.createServer((req, res) => {
  if (req.url === '/text') {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(`PID   CMDLINE\n903   sleep 3600 ${HIDE} hidden\r\n\u009b2J\u202eevil\n`);
  } else if (req.url === '/json') {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(JSON_VALUE));
  } else {
    res.writeHead(404, { 'content-type': 'application/problem+json' });
    res.end(JSON.stringify({ title: 'Not Found', detail: `no route ${HIDE}\u009b` }));
  }
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const port = (server.address() as AddressInfo).port;

t.test('--get prints text with its controls escaped, JSON as the same JSON without raw controls', async (t) => {
  const out: string[] = [];
  const err: string[] = [];
  const s = new Session({ out: (x: string) => void out.push(x), err: (x: string) => void err.push(x) }, new EventEmitter());
  const o = parseAttachArgs(['node-1', '--get', '/text', '--get', '/json', '--get', '/missing'], {});
  const code = await getPaths(s, o, port);
  t.equal(code, 1, 'a non-2xx answer still makes the exit code 1');
  t.equal(out.length, 3);
  const [text, json, problem] = out as [string, string, string];
  for (const printed of out) t.equal(RAW_CONTROL.exec(printed), null, 'no raw control reaches the terminal');
  t.equal(text, 'PID   CMDLINE\n903   sleep 3600 \\x1b[2K\\x1b[1A\\x1b[2K\\x1b[1A\\x1b]0;title\\x07\\x1b[8m hidden\\r\n\\u009b2J\\u202eevil\n');
  t.same(JSON.parse(json), JSON_VALUE, 'the JSON printed parses to what the agent sent');
  t.match(json, '\\u009b2J\\u009bH all clear');
  t.match(problem, '\\u001b[2K');
  t.match(err.join(''), 'GET /missing: 404');
});

t.test('printable: by content type', async (t) => {
  t.equal(printable('a\x1b\tb\n', 'text/plain'), 'a\\x1b\\tb\n');
  t.equal(printable('{"a":"\u0085"}\n{"b":1}\n', 'application/x-ndjson'), '{"a":"\\u0085"}\n{"b":1}\n', 'NDJSON is JSON lines');
  t.equal(printable('a\x1bb', null), 'a\\x1bb', 'no content type: text');
});
