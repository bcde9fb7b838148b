/** kubelet's health endpoint. */
import { idsOf } from '../findings.js';
import type { Rule } from './rule.js';

export const kubeletRule: Rule = {
  name: 'kubelet',
  ids: idsOf('kubelet'),
  run(s) {
    if (!s.host.ok) return [];
    const k = s.host.value.kubelet;
    if (k.ok) return [];
    const excerpt = k.reachable ? `HTTP ${k.status}: ${k.body}` : k.error;
    return [
      {
        id: 'kubelet-unhealthy',
        severity: 'critical',
        title: k.reachable ? "kubelet's health check fails" : "kubelet's health endpoint does not answer",
        detail: `${k.url}: ${excerpt}`,
        evidence: [{ source: 'http', call: `GET ${k.url}`, excerpt }],
        hint: 'kubelet is down or unhealthy: `systemctl status kubelet` and its log (GET /v1/logs?query=kubelet.service&tailLines=200); if kubelet listens elsewhere pass --kubelet-healthz.',
      },
    ];
  },
};
