#!/usr/bin/env bash
# Builds the Kubernetes components the end-to-end tests run, from the Go module registry,
# into a cache outside the clone, and prints their directory on its last line:
#
#   bash scripts/kube-build.sh        # -> ${NODETRUTH_CACHE:-~/.cache/nodetruth}/kube/v1.36.3/bin
#
# What: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl from
# k8s.io/kubernetes at one pinned release, and etcd from go.etcd.io/etcd/server/v3 at the
# version that release itself requires (its go.mod's go.etcd.io/etcd/client/v3), in one bin/.
#
# How: used as a dependency, k8s.io/kubernetes's `replace k8s.io/<m> => ./staging/...`
# lines are ignored by the go command, so a generated go.mod in the cache pins each of
# those staging modules to v0.<minor>.<patch> of the same release. The list is read from
# the release's own go.mod, never written here. One `go build` compiles all five mains
# (they share most packages); the version ldflags are those of k/k hack/lib/version.sh,
# for k8s.io/component-base/version and k8s.io/client-go/pkg/version, with the release
# tag's commit time as buildDate so two builds of one version are the same bytes.
# etcd gets its own generated module, so its dependencies are the versions etcd pins and
# not the ones Kubernetes' module graph would raise them to.
#
# Cache: GOMODCACHE and GOCACHE live under $NODETRUTH_CACHE/go, the build under
# $NODETRUTH_CACHE/kube/<version>. A stamp keyed by the versions, the go toolchain and this
# file's hash marks a finished build; a run that finds it prints the bin dir at once. The
# binaries are built into a temporary dir and moved into place before the stamp is
# written, so an interrupted build never leaves a stamp. flock serialises concurrent runs.
#
# Environment: NODETRUTH_CACHE, NODETRUTH_KUBE_VERSION (default v1.36.3),
# NODETRUTH_ETCD_VERSION (default: the one the release requires).
set -euo pipefail

KUBE_VERSION=${NODETRUTH_KUBE_VERSION:-v1.36.3}
CACHE=${NODETRUTH_CACHE:-$HOME/.cache/nodetruth}
ROOT=$CACHE/kube/$KUBE_VERSION
BIN=$ROOT/bin
STAMP=$ROOT/bin.stamp
KUBE_CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
TAGS=selinux,notest

if ! [[ $KUBE_VERSION =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "kube-build: NODETRUTH_KUBE_VERSION must be a release like v1.36.3, not '$KUBE_VERSION'" >&2
  exit 2
fi
MINOR=${BASH_REMATCH[1]}
STAGING_VERSION=v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}

export GOMODCACHE=$CACHE/go/mod
export GOCACHE=$CACHE/go/build
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS=-buildvcs=false

log() { echo "kube-build: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

mkdir -p "$ROOT"
exec 9>"$ROOT/.lock"
if ! flock -n 9; then
  log "another build of $KUBE_VERSION holds $ROOT/.lock; waiting"
  flock 9
fi

SELF_HASH=$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)
GO_VERSION=$(go env GOVERSION)
KEY_BASE="kube=$KUBE_VERSION etcd=${NODETRUTH_ETCD_VERSION:-from-release} go=$GO_VERSION script=$SELF_HASH"

all_present() {
  local b
  for b in "${KUBE_CMDS[@]}" etcd; do [[ -x $BIN/$b ]] || return 1; done
}
if [[ -f $STAMP ]] && [[ $(cat "$STAMP") == "$KEY_BASE" ]] && all_present; then
  log "cached: $BIN"
  echo "$BIN"
  exit 0
fi

T0=$(now)
# The release's own go.mod and tag time: `go mod download` outside any module.
INFO_JSON=$(cd / && GOFLAGS= go mod download -json "k8s.io/kubernetes@$KUBE_VERSION")
json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p" <<<"$INFO_JSON" | head -1; }
KUBE_GOMOD=$(json_field GoMod)
KUBE_INFO=$(json_field Info)
[[ -f $KUBE_GOMOD && -f $KUBE_INFO ]] || { log "go mod download gave no go.mod/info: $INFO_JSON"; exit 1; }
BUILD_DATE=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$KUBE_INFO")
[[ -n $BUILD_DATE ]] || { log "no Time in $KUBE_INFO"; exit 1; }
GO_DIRECTIVE=$(awk '$1 == "go" { print $2; exit }' "$KUBE_GOMOD")
# The release's godebug settings apply only in the main module: carried over as they are.
GODEBUG_LINES=$(awk '
  /^godebug[[:space:]]*\(/ { inblock = 1; print; next }
  inblock { print; if ($0 ~ /^\)/) inblock = 0; next }
  /^godebug[[:space:]]/ { print }' "$KUBE_GOMOD")
# Every `k8s.io/<m> => ./staging/...` line, inside or outside a replace block.
mapfile -t STAGING < <(awk '
  { sub(/^replace[[:space:]]+/, ""); sub(/^[[:space:]]+/, "") }
  $1 ~ /^k8s\.io\// && $2 == "=>" && $3 ~ /^\.\/staging\// { print $1 }' "$KUBE_GOMOD" | sort -u)
(( ${#STAGING[@]} > 0 )) || { log "no staging replaces found in $KUBE_GOMOD"; exit 1; }
# etcd: the version the release requires, unless pinned.
ETCD_VERSION=${NODETRUTH_ETCD_VERSION:-$(awk '
  { sub(/^require[[:space:]]+/, ""); sub(/^[[:space:]]+/, "") }
  $1 == "go.etcd.io/etcd/client/v3" { print $2; exit }' "$KUBE_GOMOD")}
[[ $ETCD_VERSION =~ ^v3\.[5-9]\. ]] || { log "etcd version '$ETCD_VERSION' is not >= 3.5"; exit 1; }
log "k8s.io/kubernetes $KUBE_VERSION (go $GO_DIRECTIVE, tagged $BUILD_DATE): ${#STAGING[@]} staging modules at $STAGING_VERSION; etcd $ETCD_VERSION"

# The Kubernetes module.
SRC=$ROOT/src
mkdir -p "$SRC"
{
  echo "// Generated by nodetruth scripts/kube-build.sh from k8s.io/kubernetes@$KUBE_VERSION's go.mod."
  echo "module nodetruth.invalid/kube-build"
  echo
  echo "go $GO_DIRECTIVE"
  echo
  [[ -z $GODEBUG_LINES ]] || printf '%s\n\n' "$GODEBUG_LINES"
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  for m in "${STAGING[@]}"; do echo "	$m => $m $STAGING_VERSION"; done
  echo ")"
} >"$SRC/go.mod.want"
# go.sum and the go.mod that `-mod=mod` completes are kept while the template is unchanged.
if ! cmp -s "$SRC/go.mod.want" "$SRC/go.mod.template" 2>/dev/null; then
  cp "$SRC/go.mod.want" "$SRC/go.mod"
  cp "$SRC/go.mod.want" "$SRC/go.mod.template"
  rm -f "$SRC/go.sum"
fi
rm -f "$SRC/go.mod.want"

# The etcd module.
ETCD_SRC=$ROOT/etcd-src
mkdir -p "$ETCD_SRC"
{
  echo "// Generated by nodetruth scripts/kube-build.sh."
  echo "module nodetruth.invalid/etcd-build"
  echo
  echo "go $GO_DIRECTIVE"
  echo
  echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION"
} >"$ETCD_SRC/go.mod.want"
if ! cmp -s "$ETCD_SRC/go.mod.want" "$ETCD_SRC/go.mod.template" 2>/dev/null; then
  cp "$ETCD_SRC/go.mod.want" "$ETCD_SRC/go.mod"
  cp "$ETCD_SRC/go.mod.want" "$ETCD_SRC/go.mod.template"
  rm -f "$ETCD_SRC/go.sum"
fi
rm -f "$ETCD_SRC/go.mod.want"

PKGS=()
for c in "${KUBE_CMDS[@]}"; do PKGS+=("k8s.io/kubernetes/cmd/$c"); done

LDFLAGS="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$MINOR"
  LDFLAGS+=" -X $p.gitTreeState=clean -X $p.buildDate=$BUILD_DATE"
done

# Downloads: resolving every imported package fetches exactly the modules the build needs
# (and completes go.mod/go.sum), so the download and the compile are timed apart.
T1=$(now)
(cd "$SRC" && go list -mod=mod -tags "$TAGS" -deps "${PKGS[@]}" >/dev/null)
(cd "$ETCD_SRC" && go list -mod=mod -deps go.etcd.io/etcd/server/v3 >/dev/null)
log "modules resolved and downloaded in $(since "$T1") s"

TMP=$ROOT/bin.tmp
rm -rf "$TMP"
mkdir -p "$TMP"
T2=$(now)
(cd "$SRC" && go build -mod=mod -trimpath -tags "$TAGS" -ldflags "$LDFLAGS" -o "$TMP/" "${PKGS[@]}")
log "kube binaries built in $(since "$T2") s"
T3=$(now)
(cd "$ETCD_SRC" && go build -mod=mod -trimpath -ldflags "-s -w" -o "$TMP/etcd" go.etcd.io/etcd/server/v3)
log "etcd built in $(since "$T3") s"

# Each binary must say the pinned version, or the ldflags did not reach it.
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
  v=$("$TMP/$c" --version 2>&1) || true
  [[ $v == "Kubernetes $KUBE_VERSION" ]] || { log "$c --version says '$v', want 'Kubernetes $KUBE_VERSION'"; exit 1; }
done
v=$("$TMP/kubectl" version --client 2>&1 | head -1) || true
[[ $v == "Client Version: $KUBE_VERSION" ]] || { log "kubectl version --client says '$v'"; exit 1; }
v=$("$TMP/etcd" --version 2>&1 | head -1) || true
[[ $v == "etcd Version: ${ETCD_VERSION#v}" ]] || { log "etcd --version says '$v', want 'etcd Version: ${ETCD_VERSION#v}'"; exit 1; }

rm -f "$STAMP"
rm -rf "$BIN"
mv "$TMP" "$BIN"
echo "$KEY_BASE" >"$STAMP"
log "built in $(since "$T0") s: $(du -sh "$BIN" | cut -f1) in $BIN"
echo "$BIN"
