import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { ParseArgsOptionsConfig } from 'node:util';
import { parseFlags } from './args.js';
import { discoverCriEndpointSync } from './readers/cri/endpoint.js';
import { DNS1123_SUBDOMAIN, durationSchema } from './validate.js';

/**
 * Flags and their environment twins (DESIGN.md "Command line and configuration").
 * Every value is validated here, once; the rest of the agent takes a Config.
 */
const FLAGS = {
  listen: { env: 'NODETRUTH_LISTEN', help: 'address to listen on (host:port), or up to 4 of them comma-separated, each served alike (same auth and TLS); non-loopback needs --auth kubernetes' },
  'host-root': { env: 'NODETRUTH_HOST_ROOT', help: "where the host's root is mounted (default /host if it exists, else /)" },
  'cri-endpoint': { env: 'NODETRUTH_CRI_ENDPOINT', help: "unix:// path of the CRI socket (default: kubelet's --container-runtime-endpoint, else containerd's, k3s/rke2's, CRI-O's socket)" },
  'cri-timeout': { env: 'NODETRUTH_CRI_TIMEOUT', help: 'deadline of every CRI call (default 2s)' },
  auth: { env: 'NODETRUTH_AUTH', help: 'none | kubernetes (TokenReview + SubjectAccessReview)' },
  'auth-audiences': { env: 'NODETRUTH_AUTH_AUDIENCES', help: 'comma-separated audiences for the TokenReview (default: none)' },
  'auth-resource': { env: 'NODETRUTH_AUTH_RESOURCE', help: 'resource/subresource checked with SubjectAccessReview (default nodes/nodetruth)' },
  tls: { env: 'NODETRUTH_TLS', help: 'auto (TLS unless the listen address is loopback) | on | off (loopback only)' },
  'tls-cert-file': { env: 'NODETRUTH_TLS_CERT_FILE', help: 'PEM certificate (chain) to serve, e.g. from a Secret; re-read when it changes (default: self-signed, made at start)' },
  'tls-key-file': { env: 'NODETRUTH_TLS_KEY_FILE', help: 'PEM private key of --tls-cert-file' },
  'node-name': { env: 'NODETRUTH_NODE_NAME', help: 'node name for the API-server view and metric labels (default $NODE_NAME, else hostname)' },
  kubeconfig: { env: 'NODETRUTH_KUBECONFIG', help: 'kubeconfig for the API-server view and auth (default $KUBECONFIG, else in-cluster)' },
  'kmsg-path': { env: 'NODETRUTH_KMSG_PATH', help: 'kernel log device (default <host-root>/dev/kmsg); a regular file is read one record per line' },
  'journalctl': { env: 'NODETRUTH_JOURNALCTL', help: 'journalctl to run: auto (host one via chroot, else bundled) or a path' },
  'max-follows': { env: 'NODETRUTH_MAX_FOLLOWS', help: 'concurrent follow streams (default 8)' },
  'max-follows-per-client': { env: 'NODETRUTH_MAX_FOLLOWS_PER_CLIENT', help: 'concurrent follow streams of one remote address, and of one user under --auth kubernetes (default 4)' },
  'follow-max': { env: 'NODETRUTH_FOLLOW_MAX', help: 'longest a follow stream lasts; it then ends with a final frame saying so (default 1h)' },
  'request-timeout': { env: 'NODETRUTH_REQUEST_TIMEOUT', help: 'server-side deadline of every non-follow request: 504 and the work cancelled (default 35s, above the journal\'s 30s)' },
  'drain-timeout': { env: 'NODETRUTH_DRAIN_TIMEOUT', help: 'a connection whose client takes none of the bytes the agent has for it for this long is closed (default 30s)' },
  'max-age': { env: 'NODETRUTH_MAX_AGE', help: 'an answer may come from a reading of the node that began this long before the request arrived; 0: every request waits for a reading begun after it arrived (default 1s)' },
  'capture-timeout': { env: 'NODETRUTH_CAPTURE_TIMEOUT', help: 'longest a capture (GET /v1/bundle, nodetruth capture) runs; the bundle then ends with what it has and its manifest says so (default 5m)' },
  'max-connections': { env: 'NODETRUTH_MAX_CONNECTIONS', help: 'open client connections at most; more are closed at once (default 256)' },
  'allowed-hosts': { env: 'NODETRUTH_ALLOWED_HOSTS', help: 'comma-separated Host names accepted besides localhost, 127.0.0.1, [::1] (loopback without --auth; any port)' },
  'kubelet-healthz': { env: 'NODETRUTH_KUBELET_HEALTHZ', help: 'kubelet healthz URL (default http://127.0.0.1:10248/healthz)' },
  'log-level': { env: 'NODETRUTH_LOG_LEVEL', help: 'pino level (default info)' },
  'session-token': { env: 'NODETRUTH_SESSION_TOKEN', help: 'the per-session secret of an attach debug pod: every request but /healthz must send it in X-Nodetruth-Session (set by nodetruth attach through the env: a flag shows in /proc/<pid>/cmdline)' },
} as const;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const listenSchema = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'expected host:port, e.g. 127.0.0.1:7070')
  .transform((s, ctx) => {
    const i = s.lastIndexOf(':');
    const host = s.slice(0, i).replace(/^\[|\]$/g, '');
    const port = Number(s.slice(i + 1));
    if (port > 65535) ctx.addIssue({ code: 'custom', message: `port ${port} out of range` });
    return { host, port };
  });

/** How many addresses one --listen may name: one server answers on each, with the same auth and TLS. */
const MAX_LISTEN_ADDRESSES = 4;
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::']);

/** `host:port[,host:port...]`: every address checked alone, then against the others. */
const listenListSchema = z
  .string()
  .max(1024, 'at most 1024 characters')
  .transform((s, ctx) => {
    const parts = s.split(',').map((p) => p.trim());
    if (parts.length > MAX_LISTEN_ADDRESSES) {
      ctx.addIssue({ code: 'custom', message: `at most ${MAX_LISTEN_ADDRESSES} addresses, got ${parts.length}` });
      return z.NEVER;
    }
    const out: { host: string; port: number }[] = [];
    for (const [i, p] of parts.entries()) {
      const r = listenSchema.safeParse(p);
      if (!r.success) {
        // one address alone keeps the plain message; in a list, say which one
        for (const issue of r.error.issues) ctx.addIssue({ code: 'custom', message: parts.length > 1 ? `address ${i + 1} ${JSON.stringify(p)}: ${issue.message}` : issue.message });
        continue;
      }
      const a = r.data;
      const clash = out.find((b) => b.port === a.port && a.port !== 0 && (b.host === a.host || WILDCARD_HOSTS.has(b.host) || WILDCARD_HOSTS.has(a.host)));
      if (clash) ctx.addIssue({ code: 'custom', message: `address ${i + 1} ${JSON.stringify(p)}: port ${a.port} on ${clash.host} is already listed (a wildcard address covers every host)` });
      out.push(a);
    }
    return out;
  });

/** A duration in ms between min and max, from text such as 30s or 1h. */
const boundedDuration = (minMs: number, maxMs: number, range: string) =>
  durationSchema({ minMs, maxMs }, (s) => `expected a duration between ${range}, got ${JSON.stringify(s)}`);

/** A Host name as a client sends it, without the port: a DNS name, an IPv4 address, or [IPv6]. */
const HOST_NAME = /^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9-]{0,62})(\.[a-z0-9]([a-z0-9-]{0,62}))*\.?)$/;

const schema = z
  .object({
    listen: listenListSchema.prefault('127.0.0.1:7070'),
    hostRoot: z.string().refine((p) => path.isAbsolute(p), 'must be an absolute path'),
    criEndpoint: z
      .string()
      .regex(/^unix:\/\/\/.+/, 'expected unix:///path/to/socket')
      .nullable(),
    criTimeoutMs: boundedDuration(1, 60_000, '1ms and 60s such as 2s or 500ms').prefault('2s'),
    auth: z.enum(['none', 'kubernetes']).default('none'),
    authAudiences: z
      .string()
      .default('')
      .transform((s) => s.split(',').map((a) => a.trim()).filter(Boolean)),
    authResource: z
      .string()
      .regex(/^[a-z0-9.-]+(\/[a-z0-9.-]+)?$/, 'expected resource or resource/subresource')
      // A subresource of nodes that nothing else serves: RBAC grants it like any other
      // (nodes/proxy would also open the kubelet's API through the API server).
      .default('nodes/nodetruth'),
    tls: z.enum(['auto', 'on', 'off']).default('auto'),
    tlsCertFile: z.string().min(1).nullable(),
    tlsKeyFile: z.string().min(1).nullable(),
    /** $NODE_IP (downward API status.hostIP): a SAN of the self-signed certificate */
    nodeIp: z.string().refine((s) => isIP(s) !== 0, '$NODE_IP: expected an IP address').nullable(),
    nodeName: z.string().regex(DNS1123_SUBDOMAIN, 'must be a DNS-1123 subdomain'),
    kubeconfig: z.string().nullable(),
    kmsgPath: z.string().nullable(),
    journalctl: z.string().default('auto'),
    maxFollows: z.coerce.number().int().min(1).max(256).default(8),
    maxFollowsPerClient: z.coerce.number().int().min(1).max(256).default(4),
    /** ms */
    followMax: boundedDuration(1000, 24 * 3600_000, '1s and 24h such as 1h or 30m').prefault('1h'),
    /** ms */
    requestTimeout: boundedDuration(1000, 600_000, '1s and 10m such as 35s').prefault('35s'),
    /** ms */
    drainTimeout: boundedDuration(1000, 600_000, '1s and 10m such as 30s').prefault('30s'),
    /** ms; 0 (or 0s) makes every request wait for a reading begun after it arrived */
    maxAge: z.string().transform((s) => (s === '0' ? '0s' : s)).pipe(boundedDuration(0, 60_000, '0 and 1m such as 1s')).prefault('1s'),
    /** ms */
    captureTimeout: boundedDuration(1000, 3600_000, '1s and 1h such as 5m').prefault('5m'),
    maxConnections: z.coerce.number().int().min(1).max(65_535).default(256),
    allowedHosts: z
      .string()
      .default('')
      .transform((s) => s.split(',').map((h) => h.trim().toLowerCase()).filter(Boolean))
      .refine((hs) => hs.length <= 64 && hs.every((h) => h.length <= 253 && HOST_NAME.test(h)), 'expected comma-separated host names without ports, such as nodetruth.local,[fd00::1]'),
    kubeletHealthz: z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:10248/healthz'),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** never logged nor echoed in an error: the message below does not quote the value */
    sessionToken: z.string().regex(/^[\x21-\x7e]{32,1024}$/, 'expected 32 to 1024 printable characters without spaces (nodetruth attach sends 43)').nullable(),
  })
  .superRefine((c, ctx) => {
    // every address obeys the rules: the first one off loopback is named
    const open = c.listen.find((a) => !isLoopback(a.host));
    if (c.auth === 'none' && open) {
      ctx.addIssue({
        code: 'custom',
        path: ['listen'],
        message: `refusing to listen on non-loopback ${open.host} without --auth kubernetes`,
      });
    }
    if (c.tls === 'off' && open) {
      ctx.addIssue({
        code: 'custom',
        path: ['tls'],
        message: `refusing to serve plain HTTP on non-loopback ${open.host}: bearer tokens would cross the network in clear. Drop --tls=off (a self-signed certificate is made at start) or pass --tls-cert-file and --tls-key-file`,
      });
    }
    if ((c.tlsCertFile === null) !== (c.tlsKeyFile === null)) {
      ctx.addIssue({ code: 'custom', path: [c.tlsCertFile === null ? 'tlsCertFile' : 'tlsKeyFile'], message: 'pass both --tls-cert-file and --tls-key-file, or neither' });
    }
    if (c.tls === 'off' && c.tlsCertFile !== null) {
      ctx.addIssue({ code: 'custom', path: ['tls'], message: '--tls=off contradicts --tls-cert-file' });
    }
  })
  // `listen` is the first address (the one the rest of the agent names); `listenAddresses` all of them.
  // Without --auth, the Host check accepts each address's own name, as it does the first's.
  .transform(({ listen, ...c }) => ({
    ...c,
    listen: listen[0]!,
    listenAddresses: listen,
    allowedHosts: [...new Set([...c.allowedHosts, ...listen.slice(1).map((a) => (a.host.includes(':') ? `[${a.host.toLowerCase()}]` : a.host.toLowerCase()))])],
  }));

export type Config = z.output<typeof schema>;

/**
 * Whether `serve` speaks TLS: always when any address is off loopback, on loopback when asked
 * (--tls=on or a certificate file). One server answers on every address, so all of them alike.
 */
export function tlsEnabled(c: Pick<Config, 'tls' | 'tlsCertFile' | 'listen'> & Partial<Pick<Config, 'listenAddresses'>>): boolean {
  const addresses = c.listenAddresses ?? [c.listen];
  return c.tls === 'on' || (c.tls === 'auto' && (addresses.some((a) => !isLoopback(a.host)) || c.tlsCertFile !== null));
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Parse argv (after the command name) and env into a Config; throws ConfigError with a readable message.
 * `extra`: a command's own flags besides the shared ones (capture's --since, triage's --json), returned in `flags`.
 */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env, extra: ParseArgsOptionsConfig = {}): { config: Config; positionals: string[]; flags: Record<string, string | boolean | undefined> } {
  const parsed = parseFlags(argv, { ...Object.fromEntries(Object.keys(FLAGS).map((f) => [f, { type: 'string' as const }])), ...extra }, (m) => new ConfigError(m));
  const raw: Record<string, unknown> = {};
  for (const [flag, { env: envName }] of Object.entries(FLAGS)) {
    const v = (parsed.values as Record<string, unknown>)[flag] ?? env[envName];
    if (v !== undefined && v !== '') raw[camel(flag)] = v;
  }
  raw.hostRoot ??= existsSync('/host') ? '/host' : '/';
  raw.nodeName ??= env.NODE_NAME || hostname().toLowerCase();
  raw.kubeconfig ??= env.KUBECONFIG || null;
  raw.kmsgPath ??= null;
  raw.tlsCertFile ??= null;
  raw.tlsKeyFile ??= null;
  raw.sessionToken ??= null;
  raw.nodeIp ??= env.NODE_IP || null;
  if (raw.criTimeout !== undefined) raw.criTimeoutMs = raw.criTimeout;
  delete raw.criTimeout;
  raw.criEndpoint ??= defaultCriEndpoint(String(raw.hostRoot));
  const result = schema.safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((i) => {
      const key = String(i.path[0] ?? '');
      const flag = key === 'criTimeoutMs' ? 'cri-timeout' : key === 'nodeIp' ? '' : key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
      return flag ? `--${flag}: ${i.message}` : i.message;
    });
    throw new ConfigError(lines.join('\n'));
  }
  const flags = Object.fromEntries(Object.keys(extra).map((k) => [k, (parsed.values as Record<string, string | boolean | undefined>)[k]]));
  return { config: result.data, positionals: parsed.positionals, flags };
}

/** kubelet's own endpoint, else the known sockets (readers/cri/endpoint.ts) */
const defaultCriEndpoint = (hostRoot: string): string | null => discoverCriEndpointSync(hostRoot).endpoint;

export function flagHelp(): string {
  return Object.entries(FLAGS)
    .map(([flag, { env, help }]) => `  --${flag.padEnd(16)} ${help}\n  ${''.padEnd(18)} env ${env}`)
    .join('\n');
}
