/**
 * A 429 says when to come back (Retry-After, RFC 9110 10.2.3), whichever
 * limit refused it: here the follow limiter (--max-follows 1) over real HTTP.
 * The journal's child cap and the pattern queue throw the same tooMany problem.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { tooMany } from '../../src/errors.js';
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
  t.match(JSON.parse(await over.body), { status: 429, title: 'Too many requests', detail: /--max-follows/ });
  first.req.destroy();
});

t.test('tooMany carries the header for every limit; at least 1 s', async (t) => {
  t.same(tooMany('x').headers, { 'retry-after': '1' });
  t.same(tooMany('x', 4.2).headers, { 'retry-after': '5' });
  t.same(tooMany('x', 0).headers, { 'retry-after': '1' });
});
