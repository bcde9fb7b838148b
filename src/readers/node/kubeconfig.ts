/**
 * Which client certificate kubelet presents to the API server: the one its --kubeconfig
 * names, found as client-go finds it. The user is current-context's (else the only user
 * of the file); its `client-certificate` is a path, a relative one resolved against the
 * kubeconfig file's own directory (as given, not a link's target); its
 * `client-certificate-data` is the base64 of a PEM and wins over the path, as in
 * client-go. A user with exec credentials (EKS), a token or nothing names no
 * certificate on disk: the caller then falls back to kubelet's --cert-dir and says why.
 *
 * The file is hostile input: read through HostFs inside the host root, bounded (a larger
 * file is skipped, never cut), parsed by the one bounded YAML parser (parseConfigDoc,
 * aliases limited), every value's type checked. A path with a NUL or a '..' component
 * is refused, not read. Nothing of the file is returned but paths and reasons: never a
 * token, never client-key or client-key-data.
 */
import path from 'node:path';
import type { NodeOs, Sourced } from '../../model/node.js';
import type { HostFs } from '../hostfs/hostfs.js';
import { parseConfigDoc, readConfigFile } from './kubelet-flags.js';

/** a kubelet kubeconfig is a few KiB, even with the CA, the certificate and the key embedded */
export const MAX_KUBECONFIG_BYTES = 64 * 1024;
/**
 * k3s runs kubelet inside its own process, so no kubelet command line names the
 * kubeconfig: the one k3s writes for it under its default --data-dir (k3s-io/k3s
 * pkg/agent/config: <data-dir>/agent/kubelet.kubeconfig).
 */
export const K3S_KUBELET_KUBECONFIG: Sourced = { value: '/var/lib/rancher/k3s/agent/kubelet.kubeconfig', source: 'known path (k3s runs kubelet in its own process)' };
const MAX_PATH_CHARS = 4096;

/** kubelet's kubeconfig: its --kubeconfig flag, else, on k3s with no kubelet command line to read, the one k3s writes. */
export function kubeletKubeconfig(os: NodeOs | undefined): Sourced | null {
  if (!os) return null;
  if (os.kubelet.kubeconfig) return os.kubelet.kubeconfig;
  return os.kubelet.flagsFrom === null && os.flavor?.name === 'k3s' ? K3S_KUBELET_KUBECONFIG : null;
}

export type ClientCertRef =
  /** the file the user's client-certificate names */
  | { kind: 'file'; path: string; source: string }
  /** the PEM text decoded from the user's client-certificate-data */
  | { kind: 'data'; pem: string; source: string }
  /** the user names a certificate that cannot be read as named (wrong type, not base64, NUL, '..') */
  | { kind: 'bad'; error: string; source: string }
  /** the kubeconfig names no client certificate, or could not be read: why, for the fallback's source */
  | { kind: 'none'; why: string };

type Doc = Record<string, unknown>;
const isMap = (v: unknown): v is Doc => v !== null && typeof v === 'object' && !Array.isArray(v);
const given = (v: unknown) => v !== undefined && v !== null && v !== '';
const quote = (s: string) => JSON.stringify(s.length > 100 ? `${s.slice(0, 100)}…` : s);
const kindOf = (v: unknown) => (v instanceof Uint8Array ? 'binary' : Array.isArray(v) ? 'a list' : isMap(v) ? 'a mapping' : `a ${typeof v}`);

/**
 * The user kubelet authenticates as: current-context's, else the file's only user; or
 * why none. client-go refuses a file with two contexts or two users of one name.
 */
export function kubeconfigUser(doc: Doc): { name: string; user: Doc } | string {
  const users = doc.users;
  if (!given(users)) return 'no users';
  if (!Array.isArray(users)) return `users is ${kindOf(users)}, not a list`;
  const current = doc['current-context'];
  let entry: Doc;
  let name: string;
  if (given(current)) {
    if (typeof current !== 'string') return `current-context is ${kindOf(current)}, not a name`;
    const contexts = Array.isArray(doc.contexts) ? doc.contexts.filter((c) => isMap(c) && c.name === current) : [];
    if (contexts.length === 0) return `current-context ${quote(current)}: no such context`;
    if (contexts.length > 1) return `context ${quote(current)} defined ${contexts.length} times (client-go refuses the file)`;
    const ctx = (contexts[0] as Doc).context;
    const user = isMap(ctx) ? ctx.user : undefined;
    if (typeof user !== 'string' || user === '') return `context ${quote(current)} names no user`;
    name = user;
    const matches = users.filter((u): u is Doc => isMap(u) && u.name === name);
    if (matches.length === 0) return `no user ${quote(name)}`;
    if (matches.length > 1) return `user ${quote(name)} defined ${matches.length} times (client-go refuses the file)`;
    entry = matches[0]!;
  } else {
    if (users.length !== 1) return `no current-context, and ${users.length} users`;
    if (!isMap(users[0])) return `its only user is ${kindOf(users[0])}, not a mapping`;
    entry = users[0];
    name = typeof entry.name === 'string' ? entry.name : '';
  }
  const user = entry.user;
  if (!given(user)) return { name, user: {} };
  if (!isMap(user)) return `user ${quote(name)} is ${kindOf(user)}, not a mapping`;
  return { name, user };
}

/** base64 as Go's decoder takes it (StdEncoding, padded; line breaks skipped), or null: Buffer.from alone skips any junk */
function strictBase64(text: string): Buffer | null {
  const t = text.replace(/[\r\n]/g, '');
  if (t.length === 0 || t.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(t)) return null;
  return Buffer.from(t, 'base64');
}

/** Why a user has no client certificate, without any of its secrets. */
function credentialKind(user: Doc): string {
  if (given(user.exec)) return 'exec credentials';
  if (given(user.token) || given(user.tokenFile)) return 'a bearer token';
  if (given(user['auth-provider'])) return 'an auth-provider';
  if (given(user.username)) return 'a username and password';
  return 'no credentials';
}

/** How a reason names the kubeconfig: "kubelet --kubeconfig <path>", where the flag was read, a message without the path repeated. */
function naming(kubeconfig: Sourced) {
  const kc = kubeconfig.value;
  // "kubelet --kubeconfig (/proc/702/cmdline)": the flag's origin alone; a known path says so itself
  const origin = /^kubelet --kubeconfig \((.+)\)$/.exec(kubeconfig.source)?.[1] ?? kubeconfig.source;
  return { kc, label: `kubelet --kubeconfig ${kc}`, origin, strip: (msg: string) => (msg.startsWith(`${kc}: `) ? msg.slice(kc.length + 2) : msg) };
}

/** The client certificate a user names, from a kubeconfig's text; pure (the caller reads the file). */
export function clientCertOfText(text: string, kubeconfig: Sourced): ClientCertRef {
  const { kc, label, origin, strip } = naming(kubeconfig);
  const p = parseConfigDoc(text, kc, 'kubeconfig');
  if ('error' in p) return { kind: 'none', why: `${label} (${origin}): ${strip(p.error)}` };
  const u = kubeconfigUser(p.doc);
  if (typeof u === 'string') return { kind: 'none', why: `${label} (${origin}): ${u}` };
  const who = `user ${quote(u.name)}`;
  const file = u.user['client-certificate'];
  const data = u.user['client-certificate-data'];
  if (given(data)) {
    const source = `${label} client-certificate-data (${origin})${given(file) ? '; client-certificate is set too, which client-go refuses' : ''}`;
    if (typeof data !== 'string') return { kind: 'bad', error: `client-certificate-data of ${who} is ${kindOf(data)}, not base64 text`, source };
    const pem = strictBase64(data);
    if (pem === null) return { kind: 'bad', error: `client-certificate-data of ${who} is not base64`, source };
    return { kind: 'data', pem: pem.toString('latin1'), source };
  }
  if (given(file)) {
    const source = `${label} client-certificate (${origin})`;
    if (typeof file !== 'string') return { kind: 'bad', error: `client-certificate of ${who} is ${kindOf(file)}, not a path`, source };
    if (file.includes('\0')) return { kind: 'bad', error: `client-certificate of ${who} has a NUL byte: not read`, source };
    if (file.length > MAX_PATH_CHARS) return { kind: 'bad', error: `client-certificate of ${who} is ${file.length} characters long: not read`, source };
    if (file.split('/').includes('..')) return { kind: 'bad', error: `client-certificate ${quote(file)} of ${who} has a '..' component: not read`, source };
    // client-go: a relative path is relative to the directory of the file that holds it
    const resolved = file.startsWith('/') ? path.posix.normalize(file) : path.posix.join(path.posix.dirname(kc), file);
    return { kind: 'file', path: resolved, source };
  }
  return { kind: 'none', why: `${label} (${origin}): ${who} has ${credentialKind(u.user)}, no client certificate` };
}

/** Read kubelet's kubeconfig (bounded, inside the host root) and say which client certificate it names. Never throws. */
export async function kubeletClientCert(fs: HostFs, kubeconfig: Sourced): Promise<ClientCertRef> {
  const { kc, label, origin, strip } = naming(kubeconfig);
  if (!kc.startsWith('/')) return { kind: 'none', why: `kubelet --kubeconfig ${quote(kc)} (${origin}): not an absolute path, not read` };
  if (kc.includes('\0') || kc.split('/').includes('..')) return { kind: 'none', why: `kubelet --kubeconfig ${quote(kc)} (${origin}): a NUL byte or a '..' component, not read` };
  let r: Awaited<ReturnType<typeof readConfigFile>>;
  try {
    r = await readConfigFile(fs, kc, MAX_KUBECONFIG_BYTES);
  } catch (err) {
    r = { error: `unreadable (${(err as NodeJS.ErrnoException | null)?.code ?? (err as Error | null)?.message ?? String(err)})` };
  }
  if (r === null) return { kind: 'none', why: `${label} (${origin}): absent` };
  if ('error' in r) return { kind: 'none', why: `${label} (${origin}): ${strip(r.error)}` };
  return clientCertOfText(r.text, kubeconfig);
}
