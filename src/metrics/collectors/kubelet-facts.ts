/**
 * What the kubelet itself will do next: when its certificates expire (NotAfter, seconds since
 * the epoch: alert on `- time() < 7*86400`), and the eviction thresholds in force (its config
 * file's, else its built-in defaults), with whether each is crossed now on the filesystem it
 * watches. Closed label sets: two certificate roles, kubelet's eviction signals x hard/soft.
 */
import { Gauge } from 'prom-client';
import type { Collector } from '../registry.js';

export const kubeletFactsCollector: Collector = {
  name: 'kubelet-facts',
  inputs: ['facts'],
  register({ registry, scrape }) {
    const registers = [registry];
    new Gauge({
      name: 'nodetruth_kubelet_certificate_expiry_seconds',
      help: "NotAfter of kubelet's client certificate (the one its --kubeconfig names: a file such as kubelet-client-current.pem or rke2/k3s' client-kubelet.crt, or client-certificate-data; else <cert-dir>/kubelet-client-current.pem) and serving certificate, as seconds since the epoch; absent when the file is not there or not a certificate.",
      labelNames: ['certificate'],
      registers,
      async collect() {
        this.reset();
        const seen = new Set<string>();
        for (const c of (await scrape().facts())?.certificates ?? []) {
          // the first of each role: the one kubelet uses (certs.ts reads them in kubelet's order)
          if (seen.has(c.role) || c.notAfterSeconds === null || !Number.isFinite(c.notAfterSeconds)) continue;
          seen.add(c.role);
          this.set({ certificate: c.role }, c.notAfterSeconds);
        }
      },
    });
    new Gauge({
      name: 'nodetruth_kubelet_eviction_threshold',
      help: 'Eviction thresholds in force, by signal and kind (hard, soft) and whether from kubelet\'s config or its built-in default; unit "ratio" (of capacity) or "quantity" (bytes, inodes or pids, as the signal counts).',
      labelNames: ['signal', 'kind', 'from', 'unit'],
      registers,
      async collect() {
        this.reset();
        for (const th of (await scrape().facts())?.eviction.thresholds ?? []) {
          const base = { signal: th.signal, kind: th.kind, from: th.from };
          if (th.ratio !== null && Number.isFinite(th.ratio)) this.set({ ...base, unit: 'ratio' }, th.ratio);
          if (th.quantity !== null && Number.isFinite(th.quantity)) this.set({ ...base, unit: 'quantity' }, th.quantity);
        }
      },
    });
    new Gauge({
      name: 'nodetruth_kubelet_eviction_threshold_crossed',
      help: 'Whether a filesystem eviction signal is below its threshold now (1: kubelet evicts, or will after the grace period for soft), by signal, kind and the path of the filesystem.',
      labelNames: ['signal', 'kind', 'path'],
      registers,
      async collect() {
        this.reset();
        for (const c of (await scrape().facts())?.eviction.checks ?? []) this.set({ signal: c.signal, kind: c.kind, path: c.path }, c.crossed ? 1 : 0);
      },
    });
  },
};
