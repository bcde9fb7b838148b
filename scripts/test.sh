#!/usr/bin/env bash
# Everything the tests need, then the whole suite: unit + integration (real containerd,
# real journal files, real /proc and /dev/kmsg, real promtool), then end-to-end in the node VM.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-apt.sh
npm ci --no-audit --no-fund
npm test
# End to end: builds the image from the Dockerfile (scripts/build-image.sh) and runs every
# scenario with the agent inside it, as the debug pod and the DaemonSet, on the bookworm
# and the sid guest. Images are cached by input hash outside the clone, so a CI run on a
# machine that ran it before starts warm (test/e2e/README.md: cold and warm timings).
export NODETRUTH_E2E_CACHE=${NODETRUTH_E2E_CACHE:-/var/cache/nodetruth-e2e}
export NODETRUTH_IMAGE_CACHE=${NODETRUTH_IMAGE_CACHE:-$NODETRUTH_E2E_CACHE/agent-image}
npm run test:e2e
