#!/usr/bin/env bash
# Everything the tests need, then the whole suite: unit + integration (real containerd,
# real journal files, real /proc and /dev/kmsg, real promtool), then end to end: the arm64
# image under qemu-user, and last the checks against real Kubernetes components in the node
# VMs: scripts/cluster-checks.sh runs the agent's image as the debug pod and the DaemonSet pod
# through the real kubelet, and the agent as a host process beside them (up, check,
# attach-check, daemonset-check, fleet-check, workload-check, cert-check, runtime-check,
# drift-check, down) on sid (containerd 2.1), then on bookworm (containerd 1.6) the checks
# whose answers come from the node (not fleet-check, cert-check nor the machine's own
# kubectl). NODETRUTH_CLUSTER_SUITES chooses the guests, NODETRUTH_WORKLOAD_CHECK=0 leaves
# the workload Pods out, NODETRUTH_CLUSTER_CHECKS=0 leaves the checks out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-apt.sh

# The Kubernetes binaries (scripts/kube-build.sh; cached outside the clone, cold 10-26 min
# of CPU on 2 cores) are built from now on in the background, far below the tests in
# priority; only the cluster checks at the end wait for them.
cluster=${NODETRUTH_CLUSTER_CHECKS:-1}
kube=
kube_log=$(mktemp "${TMPDIR:-/tmp}/nodetruth-kube-build.XXXXXX")
if [ "$cluster" = 1 ]; then
  setsid nice -n 19 bash scripts/kube-build.sh >"$kube_log" 2>&1 &
  kube=$!
fi
trap '[ -z "$kube" ] || kill -- -"$kube" 2>/dev/null || true' EXIT

npm ci --no-audit --no-fund

# The end-to-end runs' images (the agent image from the Dockerfile, the guests) are built
# in the background while npm test runs: their builds wait mostly on the Debian mirror,
# the npm registry and dpkg, and would otherwise run one after another before the VMs.
# Cached by input hash; nice'd so the tests keep the CPU they ask for.
prepare_log=$(mktemp "${TMPDIR:-/tmp}/nodetruth-e2e-prepare.XXXXXX")
setsid nice -n 10 node_modules/node/bin/node --import tsx test/e2e/prepare.ts >"$prepare_log" 2>&1 &
prepare=$!
# If npm test fails, the builds are ended with it (their process group: mmdebstrap, buildah).
trap 'kill -- -"$prepare" ${kube:+-"$kube"} 2>/dev/null || true' EXIT
# tap prints a failure where it happens, thousands of lines above the end; CI shows the end.
test_log=$(mktemp "${TMPDIR:-/tmp}/nodetruth-npm-test.XXXXXX")
if ! npm test 2>&1 | tee "$test_log"; then
  echo "# npm test failed; its failing assertions and their diagnostics:"
  grep -E -A 14 '^[[:space:]]*not ok ' "$test_log" | head -n 300
  echo "# the seeds of this run's randomised tests (each line says how to reproduce it):"
  grep -E '^[[:space:]]*# .*seeds? [0-9]' "$test_log" | head -n 5
  rm -f "$test_log"
  exit 1
fi
rm -f "$test_log"
# A build that failed here is built again by the harness that needs it, which then fails
# with the whole log if it fails again.
wait "$prepare" || echo "# the e2e images' background build failed (the harnesses build what is missing):"
trap '[ -z "$kube" ] || kill -- -"$kube" 2>/dev/null || true' EXIT
tail -n 5 "$prepare_log"
rm -f "$prepare_log"

# the linux/arm64 image (built by prepare.ts above) runs version, capture and serve --bundle under qemu-user
npm run test:e2e:arm64
if [ "$cluster" != 1 ]; then
  rm -f "$kube_log"
  echo "# cluster checks skipped (NODETRUTH_CLUSTER_CHECKS=$cluster; scripts/cluster-checks.sh runs them)"
  exit 0
fi

# dev-cluster.sh runs kube-build.sh again: a failed background build is retried there
# (in the foreground), and fails with its whole log if it fails again.
t0=$(date +%s)
wait "$kube" || echo "# the Kubernetes binaries' background build failed (retried by the cluster checks):"
trap - EXIT
echo "# waited $(($(date +%s) - t0)) s for scripts/kube-build.sh; its log's tail:"
tail -n 3 "$kube_log"
rm -f "$kube_log"
NODETRUTH_CLUSTER_SUITES=${NODETRUTH_CLUSTER_SUITES:-sid bookworm:node-checks} bash scripts/cluster-checks.sh
