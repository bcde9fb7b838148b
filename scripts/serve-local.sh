#!/usr/bin/env bash
# Set up nodetruth on this machine and serve it on 127.0.0.1:7070 (read-only, loopback).
#
# On a node (a CRI socket or kubepods cgroups found) it serves this machine. On a machine
# that is not a node it serves the example bundle shipped under examples/ instead, and
# says so on its first lines and in /readyz; pass --live to read this machine anyway.
# Other arguments go to `nodetruth serve`, e.g. --cri-endpoint unix:///run/containerd/containerd.sock
set -euo pipefail
cd "$(dirname "$0")/.."
live=0
args=()
for a in "$@"; do
  if [ "$a" = "--live" ]; then live=1; else args+=("$a"); fi
done
is_node=0
for s in /run/containerd/containerd.sock /run/crio/crio.sock; do [ -S "$s" ] && is_node=1; done
compgen -G '/sys/fs/cgroup/kubepods*' >/dev/null && is_node=1
bundle=""
if [ "$live" = 0 ] && [ "$is_node" = 0 ]; then
  for b in examples/node-vm.tar.gz examples/fake-node.tar.gz; do
    if [ -f "$b" ]; then bundle="$b"; break; fi
  done
fi
if [ -n "$bundle" ]; then
  echo "nodetruth: this machine is not a Kubernetes node (no CRI socket, no kubepods cgroups)."
  echo "nodetruth: serving the EXAMPLE BUNDLE $bundle instead: a captured node, not this machine (see examples/README.md)."
  echo "nodetruth: to read this machine itself: bash scripts/serve-local.sh --live"
fi
command -v journalctl >/dev/null || { echo "journalctl missing: apt-get install systemd" >&2; }
npm ci --no-audit --no-fund          # also builds dist/ (prepare) and fetches Node 24 from the npm registry
if [ -n "$bundle" ]; then
  echo "nodetruth: serving the example bundle $bundle on http://127.0.0.1:7070 (curl -s 127.0.0.1:7070/readyz?format=text)"
  exec npx nodetruth serve --bundle "$bundle" ${args[@]+"${args[@]}"}
fi
exec npx nodetruth serve --host-root / ${args[@]+"${args[@]}"}
