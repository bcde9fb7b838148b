#!/bin/sh
# Starts nodetruth in the guest as a transient systemd service, from the read-only
# project share, with its log on the share. Extra arguments go to `nodetruth serve`.
set -eu
NODE=/nodetruth/node_modules/node/bin/node
[ -x "$NODE" ] || { echo "no Node binary at $NODE (npm ci installs the node devDependency)"; exit 1; }
[ -f /nodetruth/dist/cli.js ] || { echo "no /nodetruth/dist/cli.js: run npm run build on the host"; exit 1; }
systemctl reset-failed nodetruth.service 2>/dev/null || true
systemd-run --unit=nodetruth --collect --working-directory=/nodetruth \
  -p StandardOutput=append:/share/agent.log -p StandardError=append:/share/agent.log \
  "$NODE" dist/cli.js serve --listen 127.0.0.1:7070 --host-root / \
  --cri-endpoint unix:///run/containerd/containerd.sock "$@"
echo "started: $($NODE --version)"
