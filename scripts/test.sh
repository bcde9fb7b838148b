#!/usr/bin/env bash
# Everything the tests need, then the whole suite: unit + integration (real containerd,
# real journal files, real /proc and /dev/kmsg, real promtool), then end-to-end in the node VM.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-apt.sh
npm ci --no-audit --no-fund
npm test
npm run test:e2e
