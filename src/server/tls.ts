/**
 * What `serve` presents over TLS: bearer tokens reach the agent
 * over the node network, so off loopback it never speaks plain HTTP.
 *
 *   --tls-cert-file / --tls-key-file   a PEM pair (e.g. a kubernetes.io/tls Secret mounted
 *                                      in the DaemonSet), read at start and re-read when the
 *                                      files change (the kubelet swaps a Secret's files)
 *   neither                            a self-signed certificate made at start (EC P-256,
 *                                      ~20 ms), new on every start; its SHA-256 fingerprint
 *                                      and public-key pin are logged and shown by /readyz,
 *                                      so a caller can pin what `kubectl logs` printed
 *
 * `selfsigned` (and its X.509 stack, ~20 MiB and 0.1-0.5 s to load) is imported only when a
 * certificate has to be made: loopback and file-based start-ups never load it.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { stat, readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';
import { ConfigError, isLoopback, tlsEnabled, type Config } from '../config.js';

/** A PEM file larger than this is not a certificate or key anyone meant to give us. */
const MAX_PEM_BYTES = 1024 * 1024;
/** How often the certificate files are checked for a change (a Secret update takes ~1 min to land). */
const TLS_RELOAD_INTERVAL_MS = 60_000;
/** The self-signed certificate outlives any pod; clients pin it rather than check dates. */
const SELF_SIGNED_DAYS = 3 * 365;

interface CertInfo {
  /** X509Certificate.fingerprint256: colon-separated hex of the DER's SHA-256 */
  fingerprint256: string;
  /** curl --pinnedpubkey value: sha256// + base64 of the SubjectPublicKeyInfo's SHA-256 */
  publicKeyPin: string;
  subjectAltName: string;
  validFrom: string;
  validTo: string;
}

export interface TlsMaterial extends CertInfo {
  source: 'file' | 'self-signed';
  key: string;
  cert: string;
  certFile: string | null;
  keyFile: string | null;
}

/** What /readyz and the start-up log show: no key, no PEM. */
export function publicTlsInfo(m: TlsMaterial | null) {
  if (!m) return { enabled: false as const };
  const { source, fingerprint256, publicKeyPin, subjectAltName, validFrom, validTo, certFile } = m;
  return { enabled: true as const, source, fingerprint256, publicKeyPin, subjectAltName, validFrom, validTo, ...(certFile ? { certFile } : {}) };
}

function describeCert(certPem: string): CertInfo {
  const x = new X509Certificate(certPem);
  const spki = x.publicKey.export({ type: 'spki', format: 'der' });
  return {
    fingerprint256: x.fingerprint256,
    publicKeyPin: `sha256//${createHash('sha256').update(spki).digest('base64')}`,
    subjectAltName: x.subjectAltName ?? '',
    validFrom: new Date(x.validFrom).toISOString(),
    validTo: new Date(x.validTo).toISOString(),
  };
}

/** The names a caller may use to reach this agent: node name, node IP, every listen address, loopback. */
export function selfSignedNames(c: Pick<Config, 'nodeName' | 'nodeIp' | 'listen'> & Partial<Pick<Config, 'listenAddresses'>>): { dns: string[]; ips: string[] } {
  const dns = new Set<string>([c.nodeName, 'localhost']);
  const ips = new Set<string>(['127.0.0.1', '::1']);
  if (c.nodeIp) ips.add(c.nodeIp);
  for (const { host: h } of c.listenAddresses ?? [c.listen]) {
    // a wildcard address is nobody's name
    if (isIP(h) !== 0 && h !== '0.0.0.0' && h !== '::') ips.add(h);
    else if (isIP(h) === 0 && !isLoopback(h)) dns.add(h);
  }
  return { dns: [...dns], ips: [...ips] };
}

export async function makeSelfSigned(names: { dns: string[]; ips: string[] }, now = new Date()): Promise<{ key: string; cert: string }> {
  // a CommonJS module: Node's ESM loader names its exports, a bundler may give only `default`
  const mod = (await import('selfsigned')) as typeof import('selfsigned') & { default?: typeof import('selfsigned') };
  const generate = mod.generate ?? mod.default!.generate;
  const pems = await generate([{ name: 'commonName', value: names.dns[0] ?? 'nodetruth' }, { name: 'organizationName', value: 'nodetruth (self-signed)' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    // a little in the past: a client whose clock is behind must not see "not yet valid"
    notBeforeDate: new Date(now.getTime() - 5 * 60_000),
    notAfterDate: new Date(now.getTime() + SELF_SIGNED_DAYS * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [...names.dns.map((value) => ({ type: 2 as const, value })), ...names.ips.map((ip) => ({ type: 7 as const, ip }))] },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

async function readPem(file: string, what: string): Promise<string> {
  let text: string;
  try {
    const s = await stat(file);
    if (!s.isFile()) throw new Error('not a regular file');
    if (s.size > MAX_PEM_BYTES) throw new Error(`${s.size} bytes, more than ${MAX_PEM_BYTES}`);
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return text;
}

/** Read and check a certificate/key pair; ConfigError says what is wrong with which file. */
export async function readPair(certFile: string, keyFile: string): Promise<TlsMaterial> {
  const [cert, key] = await Promise.all([readPem(certFile, '--tls-cert-file'), readPem(keyFile, '--tls-key-file')]);
  let info: CertInfo;
  try {
    info = describeCert(cert);
  } catch (err) {
    throw new ConfigError(`--tls-cert-file ${certFile}: not a PEM certificate (${(err as Error).message})`);
  }
  try {
    // the same check the server would make on its first handshake, made now
    createSecureContext({ key, cert });
  } catch (err) {
    throw new ConfigError(`--tls-key-file ${keyFile} does not fit --tls-cert-file ${certFile}: ${(err as Error).message}`);
  }
  return { source: 'file', key, cert, certFile, keyFile, ...info };
}

/** The TLS material `serve` needs, or null for plain HTTP (loopback without --tls=on). */
export async function loadTls(config: Config, log: Logger): Promise<TlsMaterial | null> {
  if (!tlsEnabled(config)) return null;
  let m: TlsMaterial;
  if (config.tlsCertFile && config.tlsKeyFile) {
    m = await readPair(config.tlsCertFile, config.tlsKeyFile);
  } else {
    const names = selfSignedNames(config);
    const started = performance.now();
    const pems = await makeSelfSigned(names);
    m = { source: 'self-signed', ...pems, certFile: null, keyFile: null, ...describeCert(pems.cert) };
    log.info({ ms: Math.round(performance.now() - started) }, 'TLS: made a self-signed certificate');
  }
  log.info({ tls: publicTlsInfo(m) }, `TLS: serving ${m.source === 'file' ? `the certificate of ${m.certFile}` : 'a self-signed certificate'}, SHA-256 fingerprint ${m.fingerprint256}`);
  return m;
}

/**
 * Re-read --tls-cert-file/--tls-key-file when either changes (checked by stat, async) and
 * hand the new pair to `apply` (tls.Server#setSecureContext). A pair that does not load
 * is logged and the served one stays.
 */
export function watchTlsFiles(m: TlsMaterial, apply: (key: string, cert: string) => void, log: Logger, intervalMs = TLS_RELOAD_INTERVAL_MS) {
  const sig = async () => {
    const [c, k] = await Promise.all([stat(m.certFile!), stat(m.keyFile!)]);
    return `${c.ino}:${c.size}:${c.mtimeMs} ${k.ino}:${k.size}:${k.mtimeMs}`;
  };
  let last: Promise<string | null> = sig().catch(() => null);
  let running = false;
  /** One check; true when a new pair is served. */
  const check = async (): Promise<boolean> => {
    if (running || !m.certFile || !m.keyFile) return false;
    running = true;
    try {
      const before = await last;
      const now = await sig().catch(() => null);
      if (now === null || now === before) return false;
      last = Promise.resolve(now);
      let next: TlsMaterial;
      try {
        next = await readPair(m.certFile, m.keyFile);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'TLS: the certificate files changed but do not load; still serving the previous pair');
        return false;
      }
      if (next.cert === m.cert && next.key === m.key) return false;
      apply(next.key, next.cert);
      Object.assign(m, next);
      log.info({ tls: publicTlsInfo(m) }, `TLS: serving the new certificate of ${m.certFile}, SHA-256 fingerprint ${m.fingerprint256}`);
      return true;
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void check(), intervalMs);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}
