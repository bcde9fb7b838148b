/**
 * Off loopback the agent serves TLS only. Real HTTPS servers
 * (the app from flags, listening on 127.0.0.1:0) and real TLS clients that trust the
 * certificate by fingerprint or as a CA; the config refuses plain HTTP off loopback;
 * /readyz and the start-up log show the fingerprint; a Secret's files are re-read.
 */
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, request, type RequestOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import pino from 'pino';
import t from 'tap';
import { loadConfig, tlsEnabled } from '../../src/config.js';
import { makeSelfSigned, readPair, selfSignedNames, watchTlsFiles } from '../../src/server/tls.js';
import { testApp, type TestApp } from '../helpers/app.js';

const dir = mkdtempSync(path.join(tmpdir(), 'nodetruth-tls-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

interface Answer {
  status: number;
  body: string;
  fingerprint256: string;
}

/** One HTTPS GET; `tls` decides what is trusted. */
function get(port: number, urlPath: string, tls: RequestOptions): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, agent: false, timeout: 10_000, ...tls }, (res) => {
      const fingerprint256 = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, fingerprint256 }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** Trust exactly one certificate, by its SHA-256 fingerprint (what an operator copies from the log). */
async function getPinned(port: number, urlPath: string, fingerprint256: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: urlPath, agent: false, rejectUnauthorized: false, timeout: 10_000 });
    req.on('socket', (s) => {
      (s as TLSSocket).once('secureConnect', () => {
        const got = (s as TLSSocket).getPeerCertificate().fingerprint256;
        if (got !== fingerprint256) req.destroy(new Error(`certificate ${got} is not the pinned ${fingerprint256}`));
      });
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, fingerprint256 }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

async function listen(a: TestApp): Promise<number> {
  await a.app.listen({ port: 0, host: '127.0.0.1' });
  return (a.app.server.address() as AddressInfo).port;
}

t.test('the config: TLS off loopback always, plain HTTP there refused with a reason', async (t) => {
  const env = { NODE_NAME: 'node-1' };
  const cfg = (args: string[]) => loadConfig(['--host-root', dir, ...args], env).config;
  t.equal(tlsEnabled(cfg([])), false, 'loopback default: plain HTTP (port-forward, attach)');
  t.equal(tlsEnabled(cfg(['--tls', 'on'])), true, 'loopback with --tls=on');
  t.equal(tlsEnabled(cfg(['--listen', '10.0.3.17:7070', '--auth', 'kubernetes'])), true, 'non-loopback: TLS by default');
  t.equal(tlsEnabled(cfg(['--tls-cert-file', '/c.pem', '--tls-key-file', '/k.pem'])), true, 'a certificate file asks for TLS');
  t.equal(cfg([]).authResource, 'nodes/nodetruth', 'the dedicated subresource, not nodes/proxy');
  t.throws(() => cfg(['--listen', '10.0.3.17:7070', '--auth', 'kubernetes', '--tls', 'off']), {
    name: 'ConfigError',
    message: /^--tls: refusing to serve plain HTTP on non-loopback 10\.0\.3\.17: bearer tokens would cross the network in clear/,
  });
  t.throws(() => cfg(['--listen', '0.0.0.0:7070', '--auth', 'kubernetes', '--tls=off']), { message: /plain HTTP on non-loopback 0\.0\.0\.0/ }, '0.0.0.0 too');
  t.throws(() => cfg(['--tls-cert-file', '/c.pem']), { message: '--tls-key-file: pass both --tls-cert-file and --tls-key-file, or neither' });
  t.throws(() => cfg(['--tls-key-file', '/k.pem']), { message: '--tls-cert-file: pass both --tls-cert-file and --tls-key-file, or neither' });
  t.throws(() => cfg(['--tls', 'off', '--tls-cert-file', '/c.pem', '--tls-key-file', '/k.pem']), { message: /--tls=off contradicts/ });
  t.throws(() => cfg(['--tls', 'maybe']), { message: /^--tls: / });
  t.throws(() => loadConfig(['--host-root', dir], { ...env, NODE_IP: 'not-an-ip' }), { message: '$NODE_IP: expected an IP address' });
  // env twins
  const e = loadConfig(['--host-root', dir], { ...env, NODETRUTH_TLS: 'on', NODETRUTH_TLS_CERT_FILE: '/c.pem', NODETRUTH_TLS_KEY_FILE: '/k.pem', NODE_IP: '10.0.3.17' }).config;
  t.same([e.tls, e.tlsCertFile, e.tlsKeyFile, e.nodeIp], ['on', '/c.pem', '/k.pem', '10.0.3.17']);
});

t.test('self-signed: a real HTTPS server whose certificate /readyz and the log name', async (t) => {
  const app = await testApp(['--tls', 'on', '--host-root', dir], { NODE_NAME: 'node-1', NODE_IP: '10.0.3.17' });
  t.teardown(() => app.close());
  const port = await listen(app);
  const logged = app.logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('TLS: serving a self-signed certificate')) as { tls: { fingerprint256: string; publicKeyPin: string; subjectAltName: string } } | undefined;
  t.ok(logged, 'the start-up log names the certificate');
  const fp = logged!.tls.fingerprint256;
  t.match(fp, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/, 'SHA-256 fingerprint, as X509Certificate.fingerprint256 writes it');
  t.match(logged!.tls.publicKeyPin, /^sha256\/\/[A-Za-z0-9+/]{43}=$/, 'a curl --pinnedpubkey value');
  for (const san of ['DNS:node-1', 'DNS:localhost', 'IP Address:127.0.0.1', 'IP Address:10.0.3.17']) t.match(logged!.tls.subjectAltName, san, `SAN ${san}`);
  t.notMatch(JSON.stringify(app.logs), /PRIVATE KEY/, 'the key is never logged');

  // trusted by fingerprint, as an operator who copied it from `kubectl logs` would
  const r = await getPinned(port, '/readyz', fp);
  t.equal(r.status, 200);
  const body = JSON.parse(r.body) as { tls: Record<string, unknown> };
  t.match(body.tls, { enabled: true, source: 'self-signed', fingerprint256: fp, publicKeyPin: logged!.tls.publicKeyPin });
  t.notMatch(r.body, /PRIVATE KEY|BEGIN CERTIFICATE/);
  const text = await getPinned(port, '/readyz?format=text', fp);
  t.match(text.body, new RegExp(`tls\\s+true\\s+self-signed, SHA-256 ${fp}`), 'the text table shows it too');

  // a pin that does not match is refused before the request is sent
  await t.rejects(getPinned(port, '/healthz', fp.replace(/^../, fp.startsWith('00') ? '11' : '00')), /is not the pinned/);

  // trusted as its own CA, with hostname checks: names in the SANs pass, others do not
  const cert = (await new Promise<string>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false, rejectUnauthorized: false }, (res) => {
      const raw = (res.socket as TLSSocket).getPeerCertificate().raw;
      res.resume();
      resolve(new X509Certificate(raw).toString());
    });
    req.on('error', reject);
    req.end();
  }));
  for (const servername of ['localhost', 'node-1']) {
    const ok = await get(port, '/healthz', { ca: cert, servername });
    t.equal(ok.status, 200, `verified as ${servername}`);
  }
  const ip = await get(port, '/healthz', { ca: cert });
  t.equal(ip.status, 200, 'verified as 127.0.0.1 (IP SAN)');
  await t.rejects(get(port, '/healthz', { ca: cert, servername: 'evil.example' }), /does not match|altnames/i, 'a name outside the SANs is refused');
  await t.rejects(get(port, '/healthz', {}), /self[- ]signed/i, 'an untrusting client refuses it');

  // no answer in clear on the TLS port
  const plain = await new Promise<string>((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 5000 }, (res) => {
      res.resume();
      resolve(`status ${res.statusCode}`);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve(`error ${err.message}`));
    req.end();
  });
  t.notMatch(plain, /^status 200/, `plain HTTP gets no API answer (${plain})`);
});

t.test('loopback without --tls: plain HTTP, and /readyz says so', async (t) => {
  const app = await testApp(['--host-root', dir], { NODE_NAME: 'node-1' });
  t.teardown(() => app.close());
  const r = await app.app.inject({ method: 'GET', url: '/readyz' });
  t.same(r.json().tls, { enabled: false });
  t.notOk(app.logs.some((l) => String(l.msg).startsWith('TLS:')), 'no certificate made');
});

t.test('a certificate from files (a mounted Secret): served, checked, re-read when it changes', async (t) => {
  const names = selfSignedNames({ nodeName: 'node-1', nodeIp: null, listen: { host: '127.0.0.1', port: 0 } });
  const first = await makeSelfSigned(names);
  const second = await makeSelfSigned(names);
  const certFile = path.join(dir, 'tls.crt');
  const keyFile = path.join(dir, 'tls.key');
  writeFileSync(certFile, first.cert);
  writeFileSync(keyFile, first.key);

  const app = await testApp(['--tls-cert-file', certFile, '--tls-key-file', keyFile, '--host-root', dir], { NODE_NAME: 'node-1' });
  t.teardown(() => app.close());
  const port = await listen(app);
  const ok = await get(port, '/readyz', { ca: first.cert, servername: 'localhost' });
  t.equal(ok.status, 200, 'verified against the CA a client was given');
  t.match(JSON.parse(ok.body).tls, { enabled: true, source: 'file', certFile, fingerprint256: new X509Certificate(first.cert).fingerprint256 });

  // bad files are start-up errors that name the file and the fault
  const other = path.join(dir, 'other.key');
  writeFileSync(other, second.key);
  await t.rejects(testApp(['--tls-cert-file', certFile, '--tls-key-file', other, '--host-root', dir], { NODE_NAME: 'node-1' }), {
    name: 'ConfigError',
    message: /^--tls-key-file .*other\.key does not fit --tls-cert-file .*tls\.crt/,
  });
  await t.rejects(testApp(['--tls-cert-file', path.join(dir, 'missing.crt'), '--tls-key-file', keyFile, '--host-root', dir], { NODE_NAME: 'node-1' }), {
    name: 'ConfigError',
    message: /^--tls-cert-file .*missing\.crt: ENOENT/,
  });
  const junk = path.join(dir, 'junk.crt');
  writeFileSync(junk, 'not a certificate\n');
  await t.rejects(readPair(junk, keyFile), { name: 'ConfigError', message: /junk\.crt: not a PEM certificate/ });
});

t.test('re-reading the files: a new pair is served without a restart, a broken one is not', async (t) => {
  const names = selfSignedNames({ nodeName: 'node-1', nodeIp: null, listen: { host: '127.0.0.1', port: 0 } });
  const [one, two] = [await makeSelfSigned(names), await makeSelfSigned(names)];
  const sub = mkdtempSync(path.join(dir, 'reload-'));
  const certFile = path.join(sub, 'tls.crt');
  const keyFile = path.join(sub, 'tls.key');
  writeFileSync(certFile, one.cert);
  writeFileSync(keyFile, one.key);
  const m = await readPair(certFile, keyFile);
  const server = createServer({ key: m.key, cert: m.cert }, (_req, res) => res.end('ok'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  const watch = watchTlsFiles(m, (key, cert) => server.setSecureContext({ key, cert }), log, 3_600_000);
  t.teardown(() => watch.stop());

  t.equal(await watch.check(), false, 'unchanged files: nothing to do');
  // a broken pair (the new certificate with the old key, mid-update) keeps the served one
  writeFileSync(certFile, two.cert);
  t.equal(await watch.check(), false);
  t.match(lines.at(-1), { level: 40, msg: /do not load; still serving the previous pair/ });
  t.equal((await getPinned(port, '/', new X509Certificate(one.cert).fingerprint256)).status, 200, 'still the first certificate');
  writeFileSync(keyFile, two.key);
  t.equal(await watch.check(), true, 'the whole new pair is taken');
  const fp2 = new X509Certificate(two.cert).fingerprint256;
  t.equal(m.fingerprint256, fp2, 'what /readyz shows follows');
  t.equal((await getPinned(port, '/', fp2)).status, 200, 'new connections get the new certificate');
});

t.test('self-signed names: every listen address, not only the first', async (t) => {
  const names = selfSignedNames({
    nodeName: 'node-1',
    nodeIp: '10.0.0.7',
    listen: { host: '10.0.0.8', port: 7070 },
    listenAddresses: [
      { host: '10.0.0.8', port: 7070 },
      { host: '127.0.0.2', port: 7071 },
      { host: 'agent.node-1.internal', port: 7072 },
      { host: '0.0.0.0', port: 7073 },
    ],
  });
  t.same(names.ips.sort(), ['10.0.0.7', '10.0.0.8', '127.0.0.1', '127.0.0.2', '::1'].sort());
  t.same(names.dns.sort(), ['agent.node-1.internal', 'localhost', 'node-1'].sort());
});
