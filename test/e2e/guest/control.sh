#!/bin/sh
# Runs inside the node guest as e2e-control.service (see customize.sh), from the
# read-only project share. Brings the node to "ready", then executes command files that
# the host drops into /share/cmd/:
#   host writes   <seq>.<timeout_s>.sh   (atomically, by rename)
#   guest writes  <seq>.out (stdout+stderr), then <seq>.rc (exit status, written last)
# Commands run one at a time, each under `timeout`, so a hung command cannot wedge the loop.
S=/share
log() { echo "$(date +%H:%M:%S.%N | cut -c1-12) $*" >> "$S/control.log"; }
stage() { echo "$1" > "$S/stage.tmp"; mv "$S/stage.tmp" "$S/stage"; log "stage: $1"; }

stage control-started
log "uptime: $(cut -d' ' -f1 /proc/uptime) s"

i=0
until ctr version >/dev/null 2>&1; do
  i=$((i + 1))
  if [ "$i" -gt 600 ]; then stage containerd-timeout; break; fi
  sleep 0.2
done
stage containerd-up

if ctr -n k8s.io images import /var/lib/nodetruth-e2e/images.tar >> "$S/control.log" 2>&1; then
  stage images-imported
else
  stage images-failed
fi

# The agent's image, from scripts/build-image.sh's OCI archive with uncompressed layers.
# ctr names an OCI archive's image after its org.opencontainers.image.ref.name only when
# it starts with --base-name (otherwise it is imported unnamed).
#   agent-image.txt "disk <device> <name>": an ext4 disk (oci-uncompress.ts agentImageDisk)
#     with blobs/sha256/* and import.tar (the image without its layers). The blobs are
#     linked into containerd's content store and registered by digest (the shared content
#     policy links a blob the store already has, reading nothing); then import.tar is
#     imported and unpacked. Streaming 344 MB of layers into containerd took ~400 s of TCG.
#     A blob `ctr content ingest` registers is held by no lease and no image: containerd's
#     garbage collector (scheduled after any deletion, e.g. the end of the import above
#     releasing its lease) removes its record and the link, and the unpack then finds no
#     layer. So each blob is labelled containerd.io/gc.root right after its ingest, those
#     the collector took in between are linked and registered again, and the labels are
#     removed once the image references the blobs.
#   agent-image.txt "<archive> <name>": the whole archive through `ctr images import`.
link_blobs() { # registers and holds each blob of the mounted disk not yet held
  have=$(ctr -n k8s.io content ls | grep 'containerd.io/gc.root=e2e-agent-image')
  for f in /mnt/agent-image/blobs/sha256/*; do
    d=${f##*/}
    case "$have" in *"sha256:$d"*) continue ;; esac
    ln -sfn "$f" "$cs/$d" || return 1
    # stdin is the blob itself: ctr resumes the write at the store's offset (its size)
    ctr -n k8s.io content ingest --expected-size "$(stat -L -c %s "$f")" --expected-digest "sha256:$d" "e2e-link-$d" < "$f" >> "$S/control.log" 2>&1 &&
      ctr -n k8s.io content label "sha256:$d" containerd.io/gc.root=e2e-agent-image > /dev/null 2>> "$S/control.log" ||
      log "registering $d failed"
  done
}
import_disk() { # device name
  mkdir -p /mnt/agent-image && mount -o ro "$1" /mnt/agent-image || return 1
  cs=/var/lib/containerd/io.containerd.content.v1.content/blobs/sha256
  mkdir -p "$cs"
  n=$(ls /mnt/agent-image/blobs/sha256 | wc -l)
  for pass in 1 2 3; do
    link_blobs || return 1
    held=$(ctr -n k8s.io content ls | grep -c 'containerd.io/gc.root=e2e-agent-image')
    log "agent image blobs linked and registered (pass $pass): $held of $n held"
    [ "$held" = "$n" ] && break
  done
  ctr -n k8s.io images import --base-name "${2%:*}" /mnt/agent-image/import.tar >> "$S/control.log" 2>&1
  rc=$?
  for f in /mnt/agent-image/blobs/sha256/*; do
    ctr -n k8s.io content label "sha256:${f##*/}" containerd.io/gc.root= > /dev/null 2>&1
  done
  [ "$rc" = 0 ] && return 0
  log "the linked import failed: streaming the layout into ctr images import instead"
  tar -C /mnt/agent-image -cf - oci-layout index.json blobs | ctr -n k8s.io images import --base-name "${2%:*}" - >> "$S/control.log" 2>&1
}
if [ -s "$S/agent-image.txt" ]; then
  read -r a b c < "$S/agent-image.txt"
  if [ "$a" = disk ]; then
    log "importing $c from the disk $b"
    import_disk "$b" "$c"
  else
    log "importing $a as $b"
    ctr -n k8s.io images import --base-name "${b%:*}" "$a" >> "$S/control.log" 2>&1
  fi
  ok=$?
  name=${c:-$b}
  if [ "$ok" = 0 ] && ctr -n k8s.io images ls -q | grep -qx "$name"; then
    stage agent-image-imported
  else
    ctr -n k8s.io images ls >> "$S/control.log" 2>&1
    stage images-failed
  fi
fi

# slirp's hostfwd reaches 10.0.2.15 only, nodetruth listens on loopback: relay between them.
# Bound to 10.0.2.15 alone: the DaemonSet's agent listens on the node's 127.0.0.1:7071. Until
# networkd has put that address up, socat cannot bind it: systemd starts it again.
systemd-run --unit=e2e-relay --collect -p Restart=on-failure -p RestartSec=1 \
  socat TCP-LISTEN:7071,bind=10.0.2.15,fork,reuseaddr TCP:127.0.0.1:7070 >> "$S/control.log" 2>&1

log "uptime: $(cut -d' ' -f1 /proc/uptime) s"
mkdir -p "$S/cmd"
stage ready

while :; do
  for f in "$S"/cmd/*.sh; do
    [ -e "$f" ] || continue
    name=${f##*/}
    name=${name%.sh}
    id=${name%%.*}
    t=${name#*.}
    case "$t" in *[!0-9]*|'') t=60 ;; esac
    base="$S/cmd/$id"
    mv "$f" "$base.run" || continue
    timeout -k 5 "$t" sh "$base.run" > "$base.out" 2>&1 < /dev/null
    echo $? > "$base.rc.tmp"
    mv "$base.rc.tmp" "$base.rc"
  done
  sleep 0.1
done
