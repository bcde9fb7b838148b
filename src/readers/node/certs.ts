/**
 * kubelet's certificates and when they expire. The client certificate (kubelet to the
 * API server) is the one kubelet's --kubeconfig names (kubeconfig.ts): a file
 * (kubeadm, GKE, Talos: /var/lib/kubelet/pki/kubelet-client-current.pem; rke2, k3s:
 * /var/lib/rancher/<rke2|k3s>/agent/client-kubelet.crt) or data embedded in the
 * kubeconfig. When no kubeconfig is known, or it names no certificate (exec credentials,
 * a token) or cannot be read, it is <cert-dir>/kubelet-client-current.pem, and the
 * answer's source says why. kubelet-client-current.pem is a link to the dated file of
 * the last rotation (kubelet-client-2026-03-01-10-00-00.pem): the link is normal and is
 * followed inside the host root (HostFs). Those files hold the private key too: only
 * the first CERTIFICATE block is parsed, the key is never returned. The serving
 * certificate is kubelet-server-current.pem with serverTLSBootstrap, else the
 * self-signed kubelet.crt, or the file kubelet's --tls-cert-file or its config's
 * tlsCertFile names.
 */
import { X509Certificate } from 'node:crypto';
import path from 'node:path';
import type { KubeletCertificate, Sourced } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { kubeletClientCert } from './kubeconfig.js';

const KUBELET_PKI = '/var/lib/kubelet/pki';
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

/** A certificate with no figures yet: nothing read. */
export const noCertificate = (role: 'client' | 'serving', hostPath: string): KubeletCertificate => ({ role, path: hostPath, target: null, present: false, subject: null, issuer: null, notBefore: null, notAfter: null, notAfterSeconds: null, secondsLeft: null, error: null });

/** The figures of the first certificate in a PEM text (a file's, or a kubeconfig's embedded data), over `base`. */
export function certificateIn(base: KubeletCertificate, pem: string, nowMs = Date.now()): KubeletCertificate {
  const cert = firstCertificate(pem);
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
}

export async function readCertificate(fs: HostFs, role: 'client' | 'serving', hostPath: string, nowMs = Date.now()): Promise<KubeletCertificate> {
  const base = noCertificate(role, hostPath);
  try {
    const link = await fs.readlink(hostPath);
    if (link !== null) base.target = path.posix.resolve(path.posix.dirname(hostPath), link);
    const text = await fs.readFile(hostPath, MAX_PEM_BYTES);
    if (text === null) return { ...base, error: 'absent' };
    return certificateIn(base, text, nowMs);
  } catch (err) {
    return { ...base, error: `unreadable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
}

/**
 * The client certificate: the one kubelet's kubeconfig names, else (no kubeconfig known,
 * none named, the file unreadable) <cert-dir>/kubelet-client-current.pem with the reason
 * appended to its source.
 */
async function clientCertificate(fs: HostFs, dir: string, dirSource: string, kubeconfig: Sourced | null, nowMs: number): Promise<KubeletCertificate> {
  const fromCertDir = async (why?: string) => ({ ...(await readCertificate(fs, 'client', `${dir}/kubelet-client-current.pem`, nowMs)), source: why ? `${dirSource}; ${why}` : dirSource });
  if (!kubeconfig) return fromCertDir();
  const ref = await kubeletClientCert(fs, kubeconfig);
  switch (ref.kind) {
    case 'none':
      return fromCertDir(ref.why);
    case 'file':
      return { ...(await readCertificate(fs, 'client', ref.path, nowMs)), source: ref.source };
    case 'data':
      return { ...certificateIn(noCertificate('client', kubeconfig.value), ref.pem, nowMs), source: ref.source };
    case 'bad':
      return { ...noCertificate('client', kubeconfig.value), error: ref.error, source: ref.source };
  }
}

/**
 * The client certificate (from kubelet's kubeconfig when known, see clientCertificate) and
 * the serving one: kubelet's --tls-cert-file, else tlsCertFile from its config (the caller
 * chooses, flags first as kubelet does), else the first of kubelet-server-current.pem /
 * kubelet.crt in the cert dir that exists.
 */
export async function kubeletCertificates(fs: HostFs, tlsCertFile: Sourced | null, nowMs = Date.now(), certDir?: Sourced, kubeconfig?: Sourced | null): Promise<KubeletCertificate[]> {
  // kubelet's --cert-dir (default /var/lib/kubelet/pki) holds both when the config names no tlsCertFile
  const dir = certDir && certDir.value.startsWith('/') ? certDir.value.replace(/\/+$/, '') : KUBELET_PKI;
  const dirSource = certDir ? `--cert-dir ${dir} (${certDir.source})` : `${KUBELET_PKI} (kubelet's default --cert-dir)`;
  // caught here: it runs while the serving certificate is read, and is awaited only after
  const client = clientCertificate(fs, dir, dirSource, kubeconfig ?? null, nowMs).catch((err: unknown) => ({ ...noCertificate('client', kubeconfig?.value ?? `${dir}/kubelet-client-current.pem`), error: `unreadable (${(err as NodeJS.ErrnoException | null)?.code ?? (err as Error | null)?.message ?? String(err)})` }));
  let serving: KubeletCertificate | null = null;
  const servingPaths = tlsCertFile ? [tlsCertFile.value] : [`${dir}/kubelet-server-current.pem`, `${dir}/kubelet.crt`];
  for (const p of servingPaths) {
    const c = await readCertificate(fs, 'serving', p, nowMs);
    serving = { ...c, source: tlsCertFile ? tlsCertFile.source : dirSource };
    if (c.present) break;
  }
  return [await client, ...(serving ? [serving] : [])];
}
