#!/usr/bin/env bash
# Set up nodetruth on this machine and serve it on 127.0.0.1:7070 (read-only, loopback).
# Extra arguments go to `nodetruth serve`, e.g. --cri-endpoint unix:///run/containerd/containerd.sock
set -euo pipefail
cd "$(dirname "$0")/.."
command -v journalctl >/dev/null || { echo "journalctl missing: apt-get install systemd" >&2; }
npm ci --no-audit --no-fund          # also builds dist/ (prepare) and fetches Node 24 from the npm registry
exec npx nodetruth serve --host-root / "$@"
