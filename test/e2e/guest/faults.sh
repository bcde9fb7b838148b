#!/bin/sh
# Node failures made for real in the guest, one subcommand each, run by the host through
# the command channel (scripts/cluster/workload-check.sh, through dev-cluster.sh guest).
# Read from the project share at run time, so editing this file does not rebuild the guest
# image. Every "make" has its "undo"; the host runs the undo in its cleanup too, so a failed
# scenario leaves no frozen filesystem or full conntrack table behind for the ones after it.
#
#   loopfs            a 32 MiB ext4 file system, loop-mounted at /var/lib/e2e-freeze
#                     (before the CRI driver's setup: the frozen-writer pod mounts it)
#   freeze SECS       kernel.hung_task_timeout_secs=SECS, then fsfreeze the loop fs
#   thaw              fsfreeze -u, the hung-task timeout back to what it was
#   conntrack-fill MAX  track the filler's connections (nft, port 7999) and nothing else (the
#                     host still reaches the agent, kubelet its API server and the streams of a
#                     port-forward); nf_conntrack_max=MAX; then guest/conntrack-fill.ts holds
#                     connections until the table is full
#   conntrack-undo    stop the filler, nf_conntrack_max back, the nft table removed
#   cert-expired      an expired kubelet client certificate (and its key, as kubelet keeps
#                     them) at /var/lib/kubelet/pki/kubelet-client-current.pem
#   rofs              a 16 MiB ext4 loop-mounted errors=remount-ro at /var/lib/e2e-rofs, then
#                     ext4's own error trigger (/sys/fs/ext4/<dev>/trigger_fs_error): the
#                     kernel reports the error, aborts the journal and remounts it read-only
#   rofs-undo         unmount it, the image removed
#   ioerr             a null_blk disk (configfs) whose sectors 0-127 are bad blocks, read
#                     direct and through the page cache: the block layer's I/O errors
#   ioerr-undo        the disk powered off and removed, null_blk unloaded
#   staging-taint     load (and unload) a staging driver with no hardware for it (rts5208, or r8723bs):
#                     the kernel taints itself C for the rest of the boot and says so
#   kmsg              every record in the kernel's ring buffer, as /dev/kmsg gives them,
#                     to /share/kmsg.txt; `uname -r` and `uname -v` to /share/uname.txt
set -eu
S=/share
FREEZE=/var/lib/e2e-freeze
ROFS=/var/lib/e2e-rofs
NODE=/nodetruth/node_modules/node/bin/node

case "${1:-}" in
loopfs)
  mkdir -p "$FREEZE"
  truncate -s 32M /var/lib/e2e-freeze.img
  mkfs.ext4 -q -F -L e2e-freeze /var/lib/e2e-freeze.img
  mount -o loop /var/lib/e2e-freeze.img "$FREEZE"
  findmnt -n -o SOURCE,TARGET,FSTYPE "$FREEZE"
  ;;
freeze)
  secs=${2:?freeze needs the hung-task timeout in seconds}
  cat /proc/sys/kernel/hung_task_timeout_secs > "$S/hung_task_timeout_secs.orig"
  # a fresh budget of reports (each report spends one; the default is 10 a boot)
  echo 10 > /proc/sys/kernel/hung_task_warnings
  echo "$secs" > /proc/sys/kernel/hung_task_timeout_secs
  fsfreeze -f "$FREEZE"
  echo "frozen $FREEZE; hung_task_timeout_secs $secs (was $(cat "$S/hung_task_timeout_secs.orig"))"
  ;;
thaw)
  fsfreeze -u "$FREEZE" 2>&1 || true # not frozen (freeze failed): nothing to undo
  if [ -f "$S/hung_task_timeout_secs.orig" ]; then cat "$S/hung_task_timeout_secs.orig" > /proc/sys/kernel/hung_task_timeout_secs; fi
  echo "thawed; hung_task_timeout_secs $(cat /proc/sys/kernel/hung_task_timeout_secs)"
  ;;
conntrack-fill)
  max=${2:?conntrack-fill needs nf_conntrack_max}
  modprobe nf_conntrack
  cat /proc/sys/net/netfilter/nf_conntrack_max > "$S/nf_conntrack_max.orig"
  # A rule that uses conntrack makes the kernel track this netns (nft_ct registers the
  # hooks). Only the filler's connections (conntrack-fill.ts, 127.0.0.1:7999) are tracked:
  # everything else (the relay slirp -> 10.0.2.15:7071 -> 127.0.0.1:7070, kubelet and its
  # API server, a port-forward's streams) still connects while the table is full.
  nft -f - <<'NFT'
table inet e2e_conntrack {
  chain raw_pre {
    type filter hook prerouting priority raw; policy accept;
    tcp dport 7999 accept
    tcp sport 7999 accept
    notrack
  }
  chain raw_out {
    type filter hook output priority raw; policy accept;
    tcp dport 7999 accept
    tcp sport 7999 accept
    notrack
  }
  chain input {
    type filter hook input priority filter; policy accept;
    ct state new counter
  }
}
NFT
  echo "$max" > /proc/sys/net/netfilter/nf_conntrack_max
  rm -f "$S/conntrack-fill.json"
  systemctl reset-failed e2e-conntrack-fill.service 2>/dev/null || true
  systemd-run --unit=e2e-conntrack-fill --collect -p RuntimeMaxSec=300 \
    "$NODE" /nodetruth/test/e2e/guest/conntrack-fill.ts "$((max + 40))" "$S/conntrack-fill.json"
  i=0
  until [ -s "$S/conntrack-fill.json" ]; do
    i=$((i + 1))
    [ "$i" -lt 600 ] || { echo "the filler wrote nothing in 60 s"; systemctl status e2e-conntrack-fill --no-pager || true; exit 1; }
    sleep 0.1
  done
  cat "$S/conntrack-fill.json"
  echo "count $(cat /proc/sys/net/netfilter/nf_conntrack_count) max $(cat /proc/sys/net/netfilter/nf_conntrack_max)"
  ;;
conntrack-undo)
  systemctl stop e2e-conntrack-fill.service 2>/dev/null || true
  if [ -f "$S/nf_conntrack_max.orig" ]; then cat "$S/nf_conntrack_max.orig" > /proc/sys/net/netfilter/nf_conntrack_max; fi
  nft delete table inet e2e_conntrack 2>/dev/null || true
  echo "nf_conntrack_max $(cat /proc/sys/net/netfilter/nf_conntrack_max 2>/dev/null || echo absent)"
  ;;
cert-expired)
  # openssl 3.0 has no -not_after and `x509 -days` cannot be negative: `openssl ca` takes
  # any -startdate/-enddate, so the certificate is made by a throwaway CA that signs itself.
  d=$(mktemp -d)
  cd "$d"
  mkdir newcerts
  : > index.txt
  echo 01 > serial
  cat > ca.cnf <<'CNF'
[ca]
default_ca = e2e
[e2e]
dir = .
database = ./index.txt
new_certs_dir = ./newcerts
serial = ./serial
default_md = sha256
policy = any
preserve = yes
email_in_dn = no
unique_subject = no
[any]
organizationName = optional
commonName = supplied
[req]
distinguished_name = dn
prompt = no
[dn]
O = system:nodes
CN = system:node:node1
CNF
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout key.pem -out req.pem -config ca.cnf 2>&1
  openssl ca -batch -notext -config ca.cnf -selfsign -keyfile key.pem -in req.pem \
    -startdate 20250101000000Z -enddate 20250401000000Z -out cert.pem 2>&1
  mkdir -p /var/lib/kubelet/pki
  # as kubelet keeps it: the dated file of the last rotation (certificate, then key) and the link
  cat cert.pem key.pem > /var/lib/kubelet/pki/kubelet-client-2025-01-01-00-00-00.pem
  chmod 600 /var/lib/kubelet/pki/kubelet-client-2025-01-01-00-00-00.pem
  ln -sfn kubelet-client-2025-01-01-00-00-00.pem /var/lib/kubelet/pki/kubelet-client-current.pem
  openssl x509 -in cert.pem -noout -subject -enddate
  # the key's base64 body, for the host to check that no answer carries it
  sed -n '2p' key.pem > "$S/kubelet-key-line.txt"
  cd /
  rm -rf "$d"
  ;;
cert-undo)
  rm -f /var/lib/kubelet/pki/kubelet-client-current.pem /var/lib/kubelet/pki/kubelet-client-2025-01-01-00-00-00.pem
  ;;
rofs)
  mkdir -p "$ROFS"
  truncate -s 16M /var/lib/e2e-rofs.img
  mkfs.ext4 -q -F -L e2e-rofs /var/lib/e2e-rofs.img
  mount -o loop,errors=remount-ro /var/lib/e2e-rofs.img "$ROFS"
  dev=$(findmnt -n -o SOURCE "$ROFS")
  dev=${dev#/dev/}
  echo "$dev" > "$S/rofs-dev.txt"
  echo written > "$ROFS/before"
  sync
  echo "mountinfo before: $(grep " $ROFS " /proc/self/mountinfo)"
  # ext4_error() as the filesystem calls it on corrupt metadata (fs/ext4/sysfs.c trigger_test_error)
  echo "e2e: error made by the harness" > "/sys/fs/ext4/$dev/trigger_fs_error"
  # (the shell opens the file: its error, not echo's, says why)
  if err=$( (echo again > "$ROFS/after") 2>&1); then echo "still writable after the error"; exit 1; fi
  echo "write after the error: $err"
  echo "mountinfo after: $(grep " $ROFS " /proc/self/mountinfo)"
  ;;
rofs-undo)
  umount "$ROFS" 2>/dev/null || true
  rm -f /var/lib/e2e-rofs.img
  echo "unmounted $ROFS"
  ;;
ioerr)
  modprobe null_blk nr_devices=0
  mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
  # the disk is named after its configfs item (6.1), not "nullb<index>"
  d=/sys/kernel/config/nullb/nullb0
  mkdir "$d"
  echo 16 > "$d/size" # MiB
  # 512-byte sectors 0-127 fail with BLK_STS_IOERR (null_blk's bad-block list); the partition
  # scan at power-on reads sector 0 already
  echo "+0-127" > "$d/badblocks"
  echo 1 > "$d/power"
  dev=/dev/nullb0
  i=0
  until [ -b "$dev" ]; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || { echo "no $dev after 10 s"; exit 1; }
    sleep 0.1
  done
  echo "${dev#/dev/}" > "$S/ioerr-dev.txt"
  if dd if="$dev" of=/dev/null bs=4096 count=1 iflag=direct 2>&1; then echo "a direct read of $dev succeeded"; exit 1; fi
  if dd if="$dev" of=/dev/null bs=4096 count=1 2>&1; then echo "a buffered read of $dev succeeded"; exit 1; fi
  echo "reads of $dev failed"
  ;;
ioerr-undo)
  d=/sys/kernel/config/nullb/nullb0
  if [ -d "$d" ]; then
    echo 0 > "$d/power" || true
    rmdir "$d" || true
  fi
  rmmod null_blk 2>/dev/null || true
  echo "null_blk: $(grep -c '^null_blk ' /proc/modules || true) loaded"
  ;;
staging-taint)
  echo "tainted before: $(cat /proc/sys/kernel/tainted)"
  # the first staging driver this kernel ships: bookworm's 6.1 has rts5208, sid's 7.x no
  # longer (its drivers/staging holds r8723bs, an SDIO driver that loads with no card)
  for m in rts5208 r8723bs; do
    if modprobe "$m" 2>/dev/null; then
      echo "loaded $m"
      rmmod "$m" || true
      break
    fi
  done
  echo "tainted after: $(cat /proc/sys/kernel/tainted)"
  ;;
kmsg)
  echo "$(uname -r) $(uname -v)" > "$S/uname.txt"
  # /dev/kmsg gives one record per read and then blocks for new ones: stop after 3 s
  # (exit 124); a record overwritten while it is read ends cat early (EPIPE): the count says
  timeout 3 cat /dev/kmsg > "$S/kmsg.txt" || true
  echo "$(wc -l < "$S/kmsg.txt") records, kernel $(cat "$S/uname.txt")"
  ;;
*)
  echo "usage: faults.sh loopfs | freeze SECS | thaw | conntrack-fill MAX | conntrack-undo | cert-expired | cert-undo | rofs | rofs-undo | ioerr | ioerr-undo | staging-taint | kmsg" >&2
  exit 2
  ;;
esac
