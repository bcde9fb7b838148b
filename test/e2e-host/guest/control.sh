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

# slirp's hostfwd reaches 10.0.2.15 only, nodetruth listens on loopback: relay between them.
systemd-run --unit=e2e-relay --collect \
  socat TCP-LISTEN:7071,fork,reuseaddr TCP:127.0.0.1:7070 >> "$S/control.log" 2>&1

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
