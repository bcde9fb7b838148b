#!/usr/bin/env bash
# Install the Debian packages listed in scripts/apt-packages.txt (as root, or via sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
# The suite's list, plus the node VM harness's own (test/e2e/APT_PACKAGES).
packages=$(cat scripts/apt-packages.txt test/e2e/APT_PACKAGES 2>/dev/null | grep -v '^\s*#' | sort -u | tr '\n' ' ')
missing=$(for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
[ -z "$missing" ] && exit 0
SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Debian's prometheus and containerd packages would start their own services: the tests
# start their own instances, so keep package scripts from starting any (policy-rc.d).
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null && $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
