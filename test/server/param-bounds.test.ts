/**
 * A parameter's bounds live in its zod schema, so /openapi.json shows them and
 * a value outside them is refused by validation before the handler runs: 400
 * with the reason, the parameter's name in `param` and the `code` bad_parameter.
 * Through the real HTTP server.
 */
import t from 'tap';
import { KERNEL_LIMITS, MAX_KERNEL_TAIL } from '../../src/view/kernel-log.js';
import { PODLOG_LIMITS } from '../../src/readers/podlogs/podlogs.js';
import { JOURNAL_LIMITS } from '../../src/readers/journal/limits.js';
import { testApp } from '../helpers/app.js';

const a = await testApp(['--host-root', '/nonexistent-host', '--cri-endpoint', 'unix:///nonexistent/cri.sock']);
t.teardown(() => a.close());
await a.app.listen({ port: 0, host: '127.0.0.1' });
const { port } = a.app.server.address() as { port: number };
const get = (p: string) => fetch(`http://127.0.0.1:${port}${p}`);

interface Param {
  name: string;
  in: string;
  schema: { type?: string; minimum?: number; maximum?: number; pattern?: string };
}
const doc = (await (await get('/openapi.json')).json()) as { paths: Record<string, { get: { parameters: Param[] } }> };
const param = (route: string, name: string) => doc.paths[route]!.get.parameters.find((p) => p.name === name && p.in === 'query')!.schema;

const ID = 'ab'.repeat(32);
const BOUNDS: Array<[route: string, url: string, name: string, min: number, max: number]> = [
  ['/v1/kernel', '/v1/kernel', 'tailLines', 0, MAX_KERNEL_TAIL],
  ['/v1/kernel', '/v1/kernel', 'limitBytes', 1, KERNEL_LIMITS.maxLimitBytes],
  ['/v1/kernel', '/v1/kernel', 'sinceSeq', 0, Number.MAX_SAFE_INTEGER],
  ['/v1/logs', '/v1/logs', 'tailLines', 0, JOURNAL_LIMITS.maxTailLines],
  ['/v1/logs', '/v1/logs', 'boot', -100_000, 0],
  ['/v1/containers/{id}/logs', `/v1/containers/${ID}/logs`, 'tailLines', 0, PODLOG_LIMITS.maxTailLines],
  ['/v1/containers/{id}/logs', `/v1/containers/${ID}/logs`, 'limitBytes', 1, Number.MAX_SAFE_INTEGER],
];

t.test('the OpenAPI document shows every bound', async (t) => {
  for (const [route, , name, min, max] of BOUNDS) t.match(param(route, name), { type: 'integer', minimum: min, maximum: max }, `${route} ${name}`);
  t.ok(param('/v1/logs', 'priority').pattern, '/v1/logs priority: its pattern');
});

t.test('a value outside the bounds: 400, its reason, param and code', async (t) => {
  for (const [, url, name, min, max] of BOUNDS) {
    for (const v of [min - 1, ...(max < Number.MAX_SAFE_INTEGER ? [max + 1] : [])]) {
      const r = await get(`${url}?${name}=${v}`);
      t.equal(r.status, 400, `${url} ${name}=${v}`);
      t.match(r.headers.get('content-type'), /^application\/problem\+json/);
      const body = (await r.json()) as { detail: string; param: string; code: string; errors: string[] };
      t.match(body, { code: 'bad_parameter', param: name, detail: new RegExp(`${name}: must be`) }, `${url} ${name}=${v}`);
    }
  }
  // the reasons the handlers gave before the schemas did
  const reason = async (u: string) => ((await (await get(u)).json()) as { detail: string }).detail;
  t.match(await reason('/v1/kernel?limitBytes=0'), /limitBytes: must be an integer between 1 and 16777216/);
  t.match(await reason('/v1/kernel?sinceSeq=-1'), /sinceSeq: must be 0 or more/);
  t.match(await reason(`/v1/containers/${ID}/logs?limitBytes=0`), /limitBytes: must be at least 1/);
  t.match(await reason('/v1/logs?boot=1'), /boot: must be an integer less than 1/);
});

t.test('not an integer, a bad time, a bad priority, follow with previous: 400 with the reason and code', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['/v1/kernel?tailLines=1e3', 'tailLines', /tailLines: expected an integer/],
    ['/v1/kernel?tailLines=', 'tailLines', /tailLines: expected an integer/],
    ['/v1/kernel?tailLines=0x10', 'tailLines', /tailLines: expected an integer/],
    [`/v1/containers/${ID}/logs?sinceTime=yesterday`, 'sinceTime', /sinceTime: expected RFC3339/],
    ['/v1/logs?untilTime=2026-13-99', 'untilTime', /untilTime: expected RFC3339/],
    ['/v1/logs?priority=loud', 'priority', /priority: expected a level 0-7/],
    [`/v1/containers/${ID}/logs?follow=true&previous=true`, 'follow', /follow: cannot follow a previous attempt/],
  ];
  for (const [url, name, detail] of cases) {
    const r = await get(url);
    t.equal(r.status, 400, url);
    t.match(await r.json(), { status: 400, title: 'Invalid input', code: 'bad_parameter', param: name, detail }, url);
  }
});

t.test('an unknown parameter: 400 naming it', async (t) => {
  const r = await get('/v1/pods?zzz=1');
  t.equal(r.status, 400);
  t.match(await r.json(), { code: 'bad_parameter', param: 'zzz', detail: /Unrecognized key: "zzz"/ });
});

t.test('a value within the bounds passes validation', async (t) => {
  // no kernel log here: past validation, the source answers (not a 400)
  const r = await get(`/v1/kernel?tailLines=${MAX_KERNEL_TAIL}&limitBytes=${KERNEL_LIMITS.maxLimitBytes}&sinceSeq=0`);
  t.not(r.status, 400, `${r.status} ${(await r.text()).slice(0, 200)}`);
});

t.test("what the router refuses before any route: problem+json with the table's code", async (t) => {
  const bad = await get('/v1/containers/%f2.ee/namespaces');
  t.equal(bad.status, 400);
  t.match(bad.headers.get('content-type'), /^application\/problem\+json/);
  t.match(await bad.json(), { status: 400, code: 'malformed_request', detail: /percent-encoding/ });
  // past maxParamLength (16 KiB): over HTTP the header bound (431) comes first, so through inject
  const long = await a.app.inject(`/v1/containers/${'a'.repeat(17 * 1024)}`);
  t.equal(long.statusCode, 414);
  t.match(long.json(), { status: 414, code: 'uri_too_long', title: 'URI too long' });
  t.ok(long.json().detail.length < 200, 'the detail does not echo the path');
});
