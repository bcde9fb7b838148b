#!/bin/sh
# mmdebstrap --customize-hook: configures the node guest. $1 is the root directory.
# Runs on the build host (as root) before the directory becomes an ext4 image.
# Everything that changes per run lives on the share (control.sh, start-agent.sh),
# so editing those does not rebuild the image; editing this file does (it is hashed).
set -eu
R="$1"

# --- identity: fixed machine id (no first-boot presets), hostname ---------------------
echo 6e6f64657472757468653265766d3031 > "$R/etc/machine-id"
echo node1 > "$R/etc/hostname"
cat > "$R/etc/hosts" <<'HOSTS'
127.0.0.1 localhost
127.0.1.1 node1
HOSTS

# --- filesystems: root plus two 9p shares ------------------------------------------------
# project: the nodetruth checkout, read-only (dist/, node_modules/, proto/, test/e2e-host/guest/)
# share:   this run's directory, read-write (command files, agent log, results)
mkdir -p "$R/nodetruth" "$R/share"
cat > "$R/etc/fstab" <<'FSTAB'
/dev/vda  /           ext4  rw,errors=remount-ro  0 1
project   /nodetruth  9p    trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144,nofail,x-systemd.requires=systemd-modules-load.service  0 0
share     /share      9p    trans=virtio,version=9p2000.L,msize=262144,nofail,x-systemd.requires=systemd-modules-load.service  0 0
FSTAB
printf '9p\n9pnet_virtio\n' > "$R/etc/modules-load.d/9p.conf"

# --- network: slirp's fixed addresses via systemd-networkd -------------------------------
cat > "$R/etc/systemd/network/10-slirp.network" <<'NET'
[Match]
Name=e*

[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
LinkLocalAddressing=no
IPv6AcceptRA=no
NET

# --- journald: persistent, like a real node ----------------------------------------------
mkdir -p "$R/var/log/journal" "$R/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=persistent\n' > "$R/etc/systemd/journald.conf.d/10-persistent.conf"

# --- containerd: CRI with runc + systemd cgroup driver, local sandbox image, no CNI ------
mkdir -p "$R/etc/containerd"
cat > "$R/etc/containerd/config.toml" <<'TOML'
version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/e2e/pause:1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
TOML

# --- the control unit: runs test/e2e-host/guest/control.sh from the read-only project share ---
cat > "$R/etc/systemd/system/e2e-control.service" <<'UNIT'
[Unit]
Description=nodetruth e2e control loop (runs command files from /share)
RequiresMountsFor=/nodetruth /share
Wants=containerd.service
After=containerd.service systemd-networkd.service

[Service]
Type=simple
ExecStart=/bin/sh /nodetruth/test/e2e-host/guest/control.sh
Restart=no

[Install]
WantedBy=multi-user.target
UNIT

chroot "$R" systemctl enable systemd-networkd.service e2e-control.service containerd.service
# Nothing on this node reaches the internet, and every second of a TCG boot counts.
chroot "$R" systemctl mask systemd-networkd-wait-online.service apt-daily.timer \
  apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer systemd-timesyncd.service \
  getty@tty1.service 2>/dev/null || true
