#!/usr/bin/env bash
# Everything the tests need, then the whole suite: unit + integration (real containerd,
# real journal files, real /proc and /dev/kmsg, real promtool), then end-to-end in the node VM.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-apt.sh
npm ci --no-audit --no-fund
npm test
# End to end in the node VM (test/e2e-host): a bookworm guest with systemd, containerd and
# runc; the agent runs there as a host process with --host-root /, every scenario over HTTP.
npm run test:e2e
# The agent inside its image (test/e2e): the image built from the Dockerfile with buildah,
# run as the debug pod and the DaemonSet pod through the CRI as kubelet runs them. It takes
# ~20 min warm on 2 busy cores and has not passed whole yet (test/e2e/README.md), so it is
# opt-in: NODETRUTH_E2E_IMAGE=1. Images are cached by input hash outside the clone.
if [ "${NODETRUTH_E2E_IMAGE:-0}" = 1 ]; then
  export NODETRUTH_E2E_CACHE=${NODETRUTH_E2E_CACHE:-/var/cache/nodetruth-e2e}
  export NODETRUTH_IMAGE_CACHE=${NODETRUTH_IMAGE_CACHE:-$NODETRUTH_E2E_CACHE/agent-image}
  npm run test:e2e:image
fi
