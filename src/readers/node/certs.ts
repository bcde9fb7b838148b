/**
 * kubelet's certificates and when they expire. The client certificate (kubelet to
 * the API server) is /var/lib/kubelet/pki/kubelet-client-current.pem, a link to the
 * dated file of the last rotation (kubelet-client-2026-03-01-10-00-00.pem): the link
 * is normal and is followed inside the host root (HostFs). That file holds the
 * private key too: only the first CERTIFICATE block is parsed, the key is never
 * returned. The serving certificate is kubelet-server-current.pem with
 * serverTLSBootstrap, else the self-signed kubelet.crt, or tlsCertFile from the config.
 */
import { X509Certificate } from 'node:crypto';
import path from 'node:path';
import type { KubeletCertificate } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';

export const KUBELET_PKI = '/var/lib/kubelet/pki';
export const CLIENT_CERT = `${KUBELET_PKI}/kubelet-client-current.pem`;
export const SERVING_CERTS = [`${KUBELET_PKI}/kubelet-server-current.pem`, `${KUBELET_PKI}/kubelet.crt`] as const;
/** a PEM with a certificate and a key is a few KiB; a chain a few more */
const MAX_PEM_BYTES = 256 * 1024;
const PEM_RE = /-----BEGIN CERTIFICATE-----\r?\n([A-Za-z0-9+/=\r\n]{1,200000}?)-----END CERTIFICATE-----/;

/** The first certificate of a PEM text (the leaf, as kubelet writes it first), or why none. */
export function firstCertificate(pem: string): X509Certificate | string {
  const m = PEM_RE.exec(pem);
  if (!m) return 'no CERTIFICATE block in it';
  try {
    return new X509Certificate(Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64'));
  } catch (err) {
    return `not a certificate: ${(err as Error).message}`;
  }
}

export async function readCertificate(fs: HostFs, role: 'client' | 'serving', hostPath: string, nowMs = Date.now()): Promise<KubeletCertificate> {
  const base: KubeletCertificate = { role, path: hostPath, target: null, present: false, subject: null, issuer: null, notBefore: null, notAfter: null, notAfterSeconds: null, secondsLeft: null, error: null };
  try {
    const link = await fs.readlink(hostPath);
    if (link !== null) base.target = path.posix.resolve(path.posix.dirname(hostPath), link);
    const text = await fs.readFile(hostPath, MAX_PEM_BYTES);
    if (text === null) return { ...base, error: 'absent' };
    const cert = firstCertificate(text);
    if (typeof cert === 'string') return { ...base, present: true, error: cert };
    const notAfterMs = Date.parse(cert.validTo);
    const notBeforeMs = Date.parse(cert.validFrom);
    return {
      ...base,
      present: true,
      subject: cert.subject.replace(/\n/g, ', '),
      issuer: cert.issuer.replace(/\n/g, ', '),
      notBefore: Number.isFinite(notBeforeMs) ? new Date(notBeforeMs).toISOString() : null,
      notAfter: Number.isFinite(notAfterMs) ? new Date(notAfterMs).toISOString() : null,
      notAfterSeconds: Number.isFinite(notAfterMs) ? Math.floor(notAfterMs / 1000) : null,
      secondsLeft: Number.isFinite(notAfterMs) ? Math.floor((notAfterMs - nowMs) / 1000) : null,
    };
  } catch (err) {
    return { ...base, error: `unreadable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
}

/**
 * The client certificate and the serving one: tlsCertFile from kubelet's config when
 * set, else the first of kubelet-server-current.pem / kubelet.crt that exists.
 */
export async function kubeletCertificates(fs: HostFs, tlsCertFile: string | null, nowMs = Date.now(), certDir?: { value: string; source: string }): Promise<KubeletCertificate[]> {
  // kubelet's --cert-dir (default /var/lib/kubelet/pki) holds both when the config names no tlsCertFile
  const dir = certDir && certDir.value.startsWith('/') ? certDir.value.replace(/\/+$/, '') : KUBELET_PKI;
  const dirSource = certDir ? `--cert-dir ${dir} (${certDir.source})` : `${KUBELET_PKI} (kubelet's default --cert-dir)`;
  const client = readCertificate(fs, 'client', `${dir}/kubelet-client-current.pem`, nowMs).then((c) => ({ ...c, source: dirSource }));
  let serving: KubeletCertificate | null = null;
  const servingPaths = tlsCertFile ? [tlsCertFile] : [`${dir}/kubelet-server-current.pem`, `${dir}/kubelet.crt`];
  for (const p of servingPaths) {
    const c = await readCertificate(fs, 'serving', p, nowMs);
    serving = { ...c, source: tlsCertFile ? 'kubelet config tlsCertFile' : dirSource };
    if (c.present) break;
  }
  return [await client, ...(serving ? [serving] : [])];
}
