/**
 * A 429 says when to come back (Retry-After, RFC 9110 10.2.3), whichever
 * limit refused it: here the follow limiter (--max-follows 1) over real HTTP.
 * Every code of the table that carries it (busy, too_many_*, overloaded, ...) does.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ERROR_CODES, ERROR_TYPES, Problem } from '../../src/errors.js';
import { kmsgFixture } from '../fixtures/kmsg/oom-reports.js';
import { testApp } from '../helpers/app.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-retry-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const a = await testApp(['--host-root', dir, '--kmsg-path', kmsgFixture('oom-memcg-systemd.kmsg'), '--max-follows', '1', '--follow-max', '2s']);
t.teardown(() => a.close());
await a.app.listen({ port: 0, host: '127.0.0.1' });
const port = (a.app.server.address() as AddressInfo).port;

const open = (p: string) =>
  new Promise<{ res: http.IncomingMessage; body: Promise<string>; req: http.ClientRequest }>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      resolve({ res, req, body: new Promise((r) => res.on('end', () => r(body)).on('close', () => r(body))) });
    });
    req.on('error', reject);
  });

t.test('the follow limiter: 429 with Retry-After and a problem body', async (t) => {
  const first = await open('/v1/kernel?follow=true&tailLines=1');
  t.equal(first.res.statusCode, 200);
  const over = await open('/v1/kernel?follow=true&tailLines=1');
  t.equal(over.res.statusCode, 429);
  t.match(over.res.headers['retry-after'], /^[1-9]\d*$/, 'Retry-After in whole seconds');
  t.match(over.res.headers['content-type'], /^application\/problem\+json/);
  t.match(JSON.parse(await over.body), { status: 429, title: 'Too many requests', code: 'too_many_follows', detail: /--max-follows/ });
  first.req.destroy();
});

t.test('every 429 code carries the header; whole seconds, at least 1', async (t) => {
  for (const code of ERROR_CODES.filter((c) => ERROR_TYPES[c].status === 429)) {
    t.same(new Problem(code, 'x').headers, { 'retry-after': '1' }, code);
    t.same(new Problem(code, 'x', undefined, 4.2).headers, { 'retry-after': '5' }, code);
    t.same(new Problem(code, 'x', undefined, 0).headers, { 'retry-after': '1' }, code);
  }
  t.same(new Problem('overloaded', 'x').headers, { 'retry-after': '1' });
  t.equal(new Problem('not_found', 'x').headers, undefined);
});
