/**
 * The Host check of an agent without auth (--auth none): loopback names only, against DNS
 * rebinding through an operator's port-forward (DESIGN.md "Security model").
 */
import type { FastifyInstance } from 'fastify';
import { Problem } from '../../errors.js';
import type { AppDeps } from '../app.js';

/** Host names a loopback agent without auth always answers to, with any port. */
const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/** The host part of a Host header, lowercased, without the port; null when it is not a plain host[:port]. */
function hostOf(header: string | undefined): string | null {
  if (typeof header !== 'string' || header.length === 0 || header.length > 260) return null;
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::\d{1,5})?$/.exec(header);
  return m ? m[1]!.toLowerCase() : null;
}

/**
 * --auth none: accept a request only when its Host names the agent on loopback
 * (no DNS rebinding). Without it, a web page an operator opens while a
 * port-forward runs can rebind its own name to 127.0.0.1 and read the node: the
 * browser sends the attacker's name as Host, which this refuses.
 *
 * Any port is accepted: `kubectl port-forward` maps whatever local port the
 * operator chose to the agent's, so the Host's port is the client's, not ours,
 * and a rebinding page can put any port in its URL anyway; the name is what tells
 * the attack apart. The listen address's own name (e.g. 127.0.0.2) and
 * --allowed-hosts are accepted too.
 *
 * Every route is checked, /healthz included: the debug profile's probe sets
 * `host: 127.0.0.1` (Host 127.0.0.1:7070), and the DaemonSet, whose kubelet probes
 * send the pod IP, runs --auth kubernetes, where tokens do this job and the check is off.
 */
export function installHostCheck(app: FastifyInstance, deps: AppDeps): void {
  if (deps.config.auth !== 'none') return;
  const listen = deps.config.listen.host.includes(':') ? `[${deps.config.listen.host.toLowerCase()}]` : deps.config.listen.host.toLowerCase();
  const allowed = new Set([...LOOPBACK_HOSTS, listen, ...deps.config.allowedHosts.map((h) => h.replace(/\.$/, ''))]);
  app.addHook('onRequest', async (req) => {
    const host = hostOf(req.headers.host);
    if (host !== null && allowed.has(host.replace(/\.$/, ''))) return;
    const shown = typeof req.headers.host === 'string' ? JSON.stringify(req.headers.host.slice(0, 100)) : 'none';
    throw new Problem(
      'misdirected',
      `Host ${shown} is not this agent's: without --auth it answers only to ${[...allowed].join(', ')} (any port), against DNS rebinding; add a name with --allowed-hosts (NODETRUTH_ALLOWED_HOSTS)`,
    );
  });
}
