#!/usr/bin/env bash
# A real single-node Kubernetes on this machine, from the binaries scripts/kube-build.sh
# builds (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl):
# the control plane as host processes, the node as the e2e guest under qemu (its containerd,
# the release's kubelet, a CNI bridge), through test/e2e/cluster/node.ts.
#
#   bash scripts/dev-cluster.sh up [--suite bookworm|sid] [--no-node] [--no-journal]
#                                       # start; returns with the cluster running, node Ready;
#                                       # --no-journal: a node without journald, kubelet
#                                       # logging to /var/log/kubelet.log (node.ts)
#   bash scripts/dev-cluster.sh check   # namespace + pod round trip, audited; with the node,
#                                       # a busybox pod Running and its logs
#   bash scripts/dev-cluster.sh attach-check [--kubectl FILE]
#                                       # the launcher (dist/cli.js attach) against node1,
#                                       # with the release's kubectl or FILE's first on PATH:
#                                       # answers, the audit trail, the pod deleted; on a
#                                       # --no-journal node also /v1/logs?query=kubelet from
#                                       # the file
#   bash scripts/dev-cluster.sh daemonset-check
#                                       # kubectl apply -k deploy/daemonset/core: the agent on
#                                       # node1 over TLS, --auth kubernetes through the real
#                                       # TokenReview/SubjectAccessReview, both audit trails
#   bash scripts/dev-cluster.sh drift-check
#                                       # /v1/node/drift of that agent against the real API
#                                       # server: a pod never started, kubelet stopped, a pod
#                                       # force-deleted while it is; kubelet started again
#   bash scripts/dev-cluster.sh cert-check
#                                       # kubelet restarted on expired copies of its serving,
#                                       # then client certificate: that agent's /v1/node and
#                                       # kubelet-cert-expired, what still works through the
#                                       # API server; kubelet's own certificates back
#   bash scripts/dev-cluster.sh runtime-check
#                                       # containerd frozen with SIGSTOP under that agent: the
#                                       # runtime routes 504 within the CRI deadline, the rest
#                                       # 200, triage's runtime-not-answering, then 200 again
#   bash scripts/dev-cluster.sh fleet-check [ARGS...]
#                                       # scripts/cluster/fleet-check.sh ARGS against this
#                                       # cluster: KUBECONFIG (admin), PATH with the
#                                       # release's kubectl first, NODETRUTH_DEV_CLUSTER_DIR
#                                       # (absolute), NODETRUTH_DEV_NODE, NODETRUTH_KUBE_BIN
#   bash scripts/dev-cluster.sh guest SCRIPT [SECONDS]
#                                       # SCRIPT as root in the node (default 60 s), its
#                                       # output and status (the check scripts' way in)
#   bash scripts/dev-cluster.sh down    # stop every process `up` started, by PID
#
# State in $NODETRUTH_DEV_CLUSTER_DIR (default .dev-cluster/, gitignored):
#   kubeconfig   admin (O=system:masters)     audit.log  the API server's audit log
#   pki/         CA, serving and client certs, service-account key pair (openssl)
#   etcd/        etcd's data                   logs/      one log per process
#   pids/        one PID file per process      timings    seconds from `up` to each step
#   node/        the guest's run directory (qemu.pid, serial.log, share/kubelet.log)
# Everything listens on 127.0.0.1 only: etcd on $NODETRUTH_DEV_ETCD_PORT (23790, peer +10),
# the API server on $NODETRUTH_DEV_API_PORT (16443), qemu's forward to the kubelet on
# $NODETRUTH_DEV_KUBELET_PORT (10250, the same port in the guest), qemu's forward to the
# node's 10.0.2.15:7070 (the DaemonSet's agent) on a free port (node.json's agentPort); the
# node holds the kubernetes Service's 10.96.0.1 on lo, relayed to the API server (node.ts);
# controller-manager and
# scheduler serve no port (--secure-port=0) and show they run by their leader-election leases.
# The node is named after the guest's hostname (node1); the API server dials it by that name
# (its first preferred address type, Hostname), which its own /etc/hosts (a private mount
# namespace) maps to 127.0.0.1, where qemu forwards to the guest's kubelet.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${NODETRUTH_DEV_CLUSTER_DIR:-.dev-cluster}
ETCD_PORT=${NODETRUTH_DEV_ETCD_PORT:-23790}
ETCD_PEER_PORT=$((ETCD_PORT + 10))
API_PORT=${NODETRUTH_DEV_API_PORT:-16443}
KUBELET_PORT=${NODETRUTH_DEV_KUBELET_PORT:-10250}
# the guest's hostname (test/e2e/guest/customize.sh): kubelet registers the node under it
NODE_NAME=node1
# where the guest reaches the API server: slirp's guestfwd to 127.0.0.1:$API_PORT (vm.ts)
GUEST_API_ADDR=10.0.2.100
# the guest's own address on slirp's network
GUEST_ADDR=10.0.2.15
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
PROCS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
# The tree whose launcher (dist/) and manifests (deploy/) the checks use: the one the agent
# image is built from (scripts/build-image.sh's NODETRUTH_IMAGE_CONTEXT, e.g. a `git
# worktree` of a commit, with node_modules linked in), else this checkout.
TREE=$(realpath "${NODETRUTH_IMAGE_CONTEXT:-.}")
START_WRAP=()

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
}
log() { echo "dev-cluster: $*" >&2; }
die() { log "$*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# A PID file names a process we started only while that PID still runs our binary.
ours() {
  local name=$1 pid
  [[ -f $DIR/pids/$name.pid ]] || return 1
  pid=$(cat "$DIR/pids/$name.pid")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$BIN/$name" ]] || return 1
  echo "$pid"
}

# SIGTERM to PID, then SIGKILL if it is still there 10 s later.
terminate() {
  local what=$1 pid=$2 i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "$what ($pid) ignored SIGTERM for 10 s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  log "stopped $what ($pid)"
}

stop_one() {
  local name=$1 pid
  if pid=$(ours "$name"); then terminate "$name" "$pid"; fi
  rm -f "$DIR/pids/$name.pid"
}

# The node's qemu: the PID in its pidfile, while that PID is a qemu naming our run dir.
node_pid() {
  local run pid
  run=$(realpath -ms "$DIR/node")
  [[ -f $run/qemu.pid ]] || return 1
  pid=$(cat "$run/qemu.pid")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "qemu-system.*$run/" || return 1
  echo "$pid"
}

node_down() {
  local run pid
  run=$(realpath -ms "$DIR/node")
  if pid=$(node_pid); then terminate "the node's qemu" "$pid"; fi
  rm -f "$run/qemu.pid" "$run/overlay.qcow2" "$run/share/kube/kubelet" "$run/agent-image.ext4"
}

down() {
  local i
  node_down
  for ((i = ${#PROCS[@]} - 1; i >= 0; i--)); do stop_one "${PROCS[i]}"; done
  rm -rf "$DIR/etcd" "$DIR/kubeconfig"
}

start() {
  local name=$1
  shift
  # setsid: the process outlives `up` and a Ctrl-C in the caller's terminal.
  # START_WRAP execs the binary in the same process (unshare without --fork, sh's exec).
  setsid "${START_WRAP[@]}" "$BIN/$name" "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/pids/$name.pid"
  log "started $name ($!)"
}

# wait_for SECONDS WHAT CMD...: polls CMD every 0.5 s; fails naming WHAT and the log tail.
wait_for() {
  local secs=$1 what=$2 deadline
  shift 2
  deadline=$(($(date +%s) + secs))
  until "$@" >/dev/null 2>&1; do
    if (($(date +%s) >= deadline)); then
      log "$what: not ready after $secs s"
      tail -n 20 "$DIR"/logs/*.log >&2 || true
      return 1
    fi
    sleep 0.5
  done
}

alive() { ours "$1" >/dev/null || die "$1 exited; see $DIR/logs/$1.log"; }

port_free() { ! ss -Htln "sport = :$1" | grep -q .; }

cert() { # cert NAME SUBJECT EXTENSIONS...: an EC P-256 key and a cert signed by the CA
  local name=$1 subj=$2 ext
  shift 2
  ext=$(printf '%s\n' "basicConstraints=critical,CA:FALSE" "$@")
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 30 -extfile <(echo "$ext") \
    -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$PKI/$name.csr"
}

pki() {
  PKI=$DIR/pki
  rm -rf "$PKI"
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -subj "/CN=nodetruth-dev-cluster-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  local client=("keyUsage=critical,digitalSignature" "extendedKeyUsage=clientAuth")
  cert apiserver "/CN=kube-apiserver" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,IP:$SERVICE_IP,IP:$GUEST_API_ADDR,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin "/O=system:masters/CN=nodetruth-dev-admin" "${client[@]}"
  cert controller-manager "/CN=system:kube-controller-manager" "${client[@]}"
  cert scheduler "/CN=system:kube-scheduler" "${client[@]}"
  cert apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client" "${client[@]}"
  # the node's kubelet: its client identity (the Node authorizer's and NodeRestriction's
  # system:node:<name>) and its serving cert for the API server's calls
  cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "${client[@]}"
  cert kubelet-serving "/CN=$NODE_NAME" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth" "subjectAltName=DNS:$NODE_NAME,IP:$GUEST_ADDR,IP:127.0.0.1"
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
  openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
}

kubeconfig() { # kubeconfig FILE CERT-NAME
  local f=$1 c=$2
  rm -f "$f"
  "$BIN/kubectl" config --kubeconfig="$f" set-cluster dev --server="https://127.0.0.1:$API_PORT" \
    --certificate-authority="$PKI/ca.crt" --embed-certs=true >/dev/null
  "$BIN/kubectl" config --kubeconfig="$f" set-credentials "$c" \
    --client-certificate="$PKI/$c.crt" --client-key="$PKI/$c.key" --embed-certs=true >/dev/null
  "$BIN/kubectl" config --kubeconfig="$f" set-context dev --cluster=dev --user="$c" >/dev/null
  "$BIN/kubectl" config --kubeconfig="$f" use-context dev >/dev/null
  chmod 600 "$f"
}

audit_policy() {
  cat >"$DIR/audit-policy.yaml" <<'EOF'
# Who reached a pod (port-forward, exec, attach), who bound it to a node (the scheduler's
# pods/binding), the agent's TokenReviews and SubjectAccessReviews, and every create/delete
# of a pod or DaemonSet with its body.
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources:
      - group: ""
        resources: [pods/portforward, pods/exec, pods/attach, pods/binding]
  - level: Metadata
    resources:
      - group: authentication.k8s.io
        resources: [tokenreviews]
      - group: authorization.k8s.io
        resources: [subjectaccessreviews]
  - level: RequestResponse
    verbs: [create, delete]
    resources:
      - group: ""
        resources: [pods]
      - group: apps
        resources: [daemonsets]
  - level: Metadata
    verbs: [create, delete]
    resources:
      - group: ""
        resources: [namespaces]
  - level: None
EOF
}

# audit_has 'A|B|C': some line of the audit log holds each of the fixed strings A, B, C.
audit_has() {
  awk -v want="$1" 'BEGIN { n = split(want, w, "|") }
    { for (i = 1; i <= n; i++) if (!index($0, w[i])) next; found = 1; exit }
    END { exit !found }' "$DIR/audit.log"
}

K() { "$BIN/kubectl" --kubeconfig="$DIR/kubeconfig" "$@"; }

up() {
  local t0 p suite=bookworm with_node=1 node_opts=()
  while (($#)); do
    case $1 in
      --suite) suite=${2:-}; shift 2 || usage ;;
      --suite=*) suite=${1#--suite=}; shift ;;
      --no-node) with_node=0; shift ;;
      --no-journal) node_opts+=(--no-journal); shift ;;
      *) usage ;;
    esac
  done
  [[ $suite == bookworm || $suite == sid ]] || die "--suite: bookworm or sid"
  t0=$(now)
  BIN=$(bash scripts/kube-build.sh | tail -n 1)
  local t_build
  t_build=$(since "$t0")
  for p in "${PROCS[@]}"; do
    if ours "$p" >/dev/null; then die "$p is already running from $DIR; run down first"; fi
  done
  if node_pid >/dev/null; then die "the node's qemu is already running from $DIR; run down first"; fi
  for p in "$ETCD_PORT" "$ETCD_PEER_PORT" "$API_PORT" "$KUBELET_PORT"; do
    port_free "$p" || die "127.0.0.1:$p is in use; set NODETRUTH_DEV_ETCD_PORT / NODETRUTH_DEV_API_PORT / NODETRUTH_DEV_KUBELET_PORT"
  done
  mkdir -p "$DIR/pids" "$DIR/logs"
  rm -rf "$DIR/etcd"
  : >"$DIR/audit.log"
  t0=$(now)
  pki
  audit_policy
  kubeconfig "$DIR/kubeconfig" admin
  kubeconfig "$DIR/controller-manager.kubeconfig" controller-manager
  kubeconfig "$DIR/scheduler.kubeconfig" scheduler
  local t_pki
  t_pki=$(since "$t0")
  echo "$BIN" >"$DIR/bin"
  UP_OK=0
  trap '[[ $UP_OK == 1 ]] || { log "up failed; stopping what it started"; down; }' EXIT

  t0=$(now)
  # --unsafe-no-fsync: a throwaway cluster's data; fsync on a shared disk only slows it.
  start etcd --name=dev --data-dir="$DIR/etcd" --unsafe-no-fsync \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="dev=http://127.0.0.1:$ETCD_PEER_PORT"
  wait_for 60 etcd curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
  local t_etcd
  t_etcd=$(since "$t0")
  alive etcd

  # The API server's own /etc/hosts names the node 127.0.0.1 (see the header).
  { cat /etc/hosts; echo "127.0.0.1 $NODE_NAME"; } >"$DIR/apiserver-hosts"
  START_WRAP=(unshare --mount --propagation private
    sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$DIR/apiserver-hosts")
  start kube-apiserver --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --client-ca-file="$PKI/ca.crt" \
    --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
    --allow-privileged=true \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
    --audit-policy-file="$DIR/audit-policy.yaml" --audit-log-path="$DIR/audit.log" \
    --audit-log-format=json --kubelet-preferred-address-types=Hostname,InternalIP
  START_WRAP=()
  wait_for 180 kube-apiserver K get --raw /readyz
  local t_api
  t_api=$(since "$t0")
  alive kube-apiserver
  [[ $(K auth can-i '*' '*') == yes ]] || die "the admin kubeconfig cannot do everything"
  # The API server's kubelet client may proxy, exec and port-forward (as local-up-cluster.sh).
  K create clusterrolebinding nodetruth-dev-apiserver-kubelet-api-admin \
    --clusterrole=system:kubelet-api-admin --user=kube-apiserver-kubelet-client >/dev/null

  start kube-controller-manager --kubeconfig="$DIR/controller-manager.kubeconfig" \
    --secure-port=0 --leader-elect=true \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --node-monitor-grace-period=5m
  start kube-scheduler --kubeconfig="$DIR/scheduler.kubeconfig" --secure-port=0 --leader-elect=true
  wait_for 120 kube-controller-manager K -n kube-system get lease kube-controller-manager
  wait_for 120 kube-scheduler K -n kube-system get lease kube-scheduler
  alive kube-controller-manager
  alive kube-scheduler
  local t_all
  t_all=$(since "$t0")
  cat >"$DIR/timings" <<EOF
build (kube-build.sh) ${t_build} s
pki and kubeconfigs ${t_pki} s
etcd healthy ${t_etcd} s after start
kube-apiserver /readyz ${t_api} s after etcd start
controller-manager and scheduler leases ${t_all} s after etcd start
EOF
  log "control plane up (etcd to /readyz ${t_api} s, to both leases ${t_all} s)"
  if ((with_node)); then
    log "booting the $suite guest and its kubelet (test/e2e/cluster/node.ts; minutes under TCG)"
    rm -f "$DIR/node-timings"
    npx tsx test/e2e/cluster/node.ts up --dir="$DIR" --suite="$suite" --bin="$BIN" \
      --api-port="$API_PORT" --kubelet-port="$KUBELET_PORT" --node="$NODE_NAME" \
      --service-ip="$SERVICE_IP" "${node_opts[@]}" ||
      die "the node did not become Ready (its logs: $DIR/node/)"
    sed 's/^/node: /' "$DIR/node-timings" >>"$DIR/timings"
    K get nodes -o wide >&2
  fi
  UP_OK=1
  cat >&2 <<EOF
  export KUBECONFIG=$(realpath "$DIR")/kubeconfig
  kubectl: $BIN/kubectl   (API server https://127.0.0.1:$API_PORT)
  audit log: $(realpath "$DIR")/audit.log
EOF
  if ((with_node)); then
    cat >&2 <<EOF
  node: $NODE_NAME ($suite guest; kubelet log $(jq -r 'if .journal then "'"$(realpath "$DIR")"'/node/share/kubelet.log" else "the guest'"'"'s \(.kubeletLog), no journald" end' "$DIR/node.json"))
  images in its containerd (never pulled; use imagePullPolicy: Never or IfNotPresent):
    localhost/e2e/busybox:1, ghcr.io/nodetruth/nodetruth:0.1.0 (the agent, built from the working tree)
  Stop with: bash scripts/dev-cluster.sh down
EOF
  else
    echo "  No node (--no-node): pods stay Pending. Stop with: bash scripts/dev-cluster.sh down" >&2
  fi
}

check() {
  local ns pod t0 i
  for p in "${PROCS[@]}"; do alive "$p"; done
  t0=$(now)
  K get --raw /readyz >/dev/null
  [[ $(K auth can-i create pods --all-namespaces) == yes ]] || die "admin cannot create pods"
  ns=dev-cluster-check-$(openssl rand -hex 3)
  pod=check
  K create namespace "$ns" >/dev/null
  # The controller-manager's service-account and root-CA publisher controllers.
  wait_for 60 "ServiceAccount default in $ns" K -n "$ns" get serviceaccount default
  wait_for 60 "ConfigMap kube-root-ca.crt in $ns" K -n "$ns" get configmap kube-root-ca.crt
  if K get node "$NODE_NAME" >/dev/null 2>&1; then
    # The node: a pod of an image imported into its containerd runs, and its log comes back
    # through the API server -> kubelet path.
    local token phase logs t1
    token=check-$(openssl rand -hex 4)
    t1=$(now)
    K -n "$ns" run "$pod" --image=localhost/e2e/busybox:1 --image-pull-policy=Never \
      --restart=Never -- sh -c "echo $token from \$(hostname); exec sleep 3600" >/dev/null
    wait_for 300 "$ns/$pod Running on $NODE_NAME" bash -c \
      "'$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n '$ns' get pod '$pod' \
         -o jsonpath='{.status.phase}' | grep -qx Running" ||
      { K -n "$ns" describe pod "$pod" >&2; die "the pod did not run"; }
    log "pod $ns/$pod Running after $(since "$t1") s: $(K -n "$ns" get pod "$pod" -o wide --no-headers)"
    wait_for 60 "the log of $ns/$pod" bash -c \
      "'$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n '$ns' logs '$pod' | grep -q '^$token from $pod\$'"
    logs=$(K -n "$ns" logs "$pod")
    log "kubectl logs $pod: $logs"
  else
    K -n "$ns" run "$pod" --image=registry.k8s.io/pause:3.10 --restart=Never >/dev/null
    # No node: the scheduler must say so on the pod.
    wait_for 60 "the scheduler's verdict on $ns/$pod" bash -c \
      "'$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n '$ns' get pod '$pod' \
         -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")].reason}' | grep -qx Unschedulable"
  fi
  K -n "$ns" delete pod "$pod" --wait=false >/dev/null
  K delete namespace "$ns" --wait=false >/dev/null
  # An event is written at its ResponseComplete stage, after the client saw the answer:
  # poll for each briefly.
  local want
  for want in \
    "\"verb\":\"create\"|\"resource\":\"namespaces\"|\"name\":\"$ns\"" \
    "\"level\":\"RequestResponse\"|\"username\":\"nodetruth-dev-admin\"|\"verb\":\"create\"|\"resource\":\"pods\"|\"namespace\":\"$ns\"|\"requestObject\"" \
    "\"verb\":\"delete\"|\"resource\":\"pods\"|\"namespace\":\"$ns\"|\"name\":\"$pod\"" \
    "\"verb\":\"delete\"|\"resource\":\"namespaces\"|\"name\":\"$ns\""; do
    for ((i = 0; i < 20; i++)); do
      audit_has "$want" && break
      sleep 0.5
    done
    audit_has "$want" || die "no audit event with all of $want in $DIR/audit.log"
  done
  # The policy's None: reading pods is not audited.
  if audit_has "\"verb\":\"get\"|\"resource\":\"pods\"|\"namespace\":\"$ns\""; then
    die "a get of a pod was audited; the policy's last rule should be None"
  fi
  log "check passed in $(since "$t0") s: namespace $ns, service account, root CA, scheduler verdict, audit events"
}

# The real launcher against the real cluster, as a user runs it: `nodetruth attach node1
# --get ...` with this release's kubectl (or --kubectl FILE, e.g. the machine's own 1.32)
# first on PATH and the admin kubeconfig, in the
# namespace deploy/attach-rbac.yaml makes (Pod Security privileged). Asserts the answers
# (exit 0: every --get was 2xx) name the kernel the node's kubelet reports (/v1/node) and
# the node (the triage text), the audit log
# holds the caller's create of the debug pod (RequestResponse) and its pods/portforward
# (Metadata), and the pod is gone afterwards. Keeps in $DIR: attach.out / attach.err (the
# launcher's), attach-pod-created.json and attach-pod-deleted.json (the pod as the API
# server answered the create and the delete: spec after defaulting, then its status).
attach_check() {
  local ns=nodetruth-attach t0 rc pod kernel i node_bin=node_modules/.bin/node kubectl=$BIN/kubectl
  while (($#)); do
    case $1 in
      --kubectl) kubectl=${2:-}; shift 2 || usage ;;
      --kubectl=*) kubectl=${1#--kubectl=}; shift ;;
      *) usage ;;
    esac
  done
  [[ -x $kubectl && $(basename "$kubectl") == kubectl ]] || die "--kubectl: an executable named kubectl"
  kubectl=$(realpath "$kubectl")
  node_ready
  t0=$(now)
  # dist/ from the tree: rebuilt when any source is newer than dist/cli.js
  if [[ ! -f $TREE/dist/cli.js ]] || [[ -n $(find "$TREE/src" "$TREE/deploy" -newer "$TREE/dist/cli.js" -print -quit) ]]; then
    log "building $TREE/dist/ (npm run build)"
    (cd "$TREE" && npm run --silent build) >&2
  fi
  # A first apply can race the namespace's own ServiceAccount controller: it reads no
  # `default` ServiceAccount, the controller creates one, the create then fails
  # AlreadyExists. The next apply patches it.
  for ((i = 1; ; i++)); do
    K apply -f "$TREE/deploy/attach-rbac.yaml" >/dev/null && break
    ((i < 3)) || die "kubectl apply -f deploy/attach-rbac.yaml failed $i times"
    log "kubectl apply -f deploy/attach-rbac.yaml failed; once more"
    sleep 1
  done
  [[ $(K -n nodetruth-attach get serviceaccount default -o jsonpath='{.automountServiceAccountToken}') == false ]] ||
    die "the default ServiceAccount of nodetruth-attach mounts its token"
  [[ $(K get namespace "$ns" -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}') == privileged ]] ||
    die "namespace $ns is not Pod Security privileged"
  kernel=$(K get node "$NODE_NAME" -o jsonpath='{.status.nodeInfo.kernelVersion}')
  [[ -n $kernel ]] || die "node $NODE_NAME reports no kernel version"
  local kver
  kver=$("$kubectl" version --client -o json | jq -r .clientVersion.gitVersion)
  # a node without a journal (up --no-journal): kubelet's unit log is asked for too
  local gets=(--get /v1/node) journal
  journal=$(jq -r .journal "$DIR/node.json")
  [[ $journal == false ]] && gets+=(--get '/v1/logs?query=kubelet&tailLines=50')
  gets+=(--get '/v1/triage?format=text')
  log "attach $NODE_NAME -n $ns ($kubectl $kver); the agent starts under TCG: minutes"
  set +e
  PATH="$(dirname "$kubectl"):$PATH" KUBECONFIG="$(realpath "$DIR")/kubeconfig" timeout 900 "$node_bin" "$TREE/dist/cli.js" attach "$NODE_NAME" \
    -n "$ns" --timeout=10m "${gets[@]}" \
    >"$DIR/attach.out" 2>"$DIR/attach.err"
  rc=$?
  set -e
  sed 's/^/attach: /' "$DIR/attach.err" >&2
  pod=$(sed -n 's/^.*pod \(node-debugger-[a-z0-9.-]*\) created.*$/\1/p' "$DIR/attach.err" | head -n 1)
  [[ $rc == 0 ]] || die "attach exited $rc (an answer not 2xx, or a step failed); see $DIR/attach.err and $DIR/attach.out"
  [[ -n $pod ]] || die "attach named no pod in $DIR/attach.err"
  log "attach exited 0 after $(since "$t0") s; pod $pod"
  # /v1/node's kernelRelease and the triage text both name the kernel the kubelet reports
  head -n 1 "$DIR/attach.out" | jq -e --arg k "$kernel" '.kernelRelease == $k' >/dev/null ||
    die "/v1/node (first line of $DIR/attach.out) does not say kernelRelease $kernel"
  # the triage text names the node (its first line), not the kernel
  grep -qF "nodetruth triage of $NODE_NAME at " "$DIR/attach.out" || die "the triage text does not name $NODE_NAME"
  log "/v1/node names $NODE_NAME's kernel $kernel; /v1/triage?format=text names $NODE_NAME"
  if [[ $journal == false ]]; then
    # the second answer: the file backend, named, with kubelet's own klog lines that the
    # node's /var/log/kubelet.log holds
    sed -n 2p "$DIR/attach.out" >"$DIR/attach-logs.json"
    jq -e '.source == "file" and .file == "/var/log/kubelet.log" and (.warnings[0] | startswith("no journal on this node"))' "$DIR/attach-logs.json" >/dev/null ||
      die "/v1/logs?query=kubelet does not name the file backend /var/log/kubelet.log: $(head -c 600 "$DIR/attach-logs.json")"
    jq -e '(.lines | length) > 0 and any(.lines[]; test("^[IWEF][0-9]{4} [0-9:.]+ +[0-9]+ [^ ]+:[0-9]+\\] "))' "$DIR/attach-logs.json" >/dev/null ||
      die "/v1/logs?query=kubelet holds no kubelet (klog) line: $(head -c 600 "$DIR/attach-logs.json")"
    guest "test ! -e /var/log/journal && test ! -e /run/log/journal && ! systemctl is-active -q systemd-journald.service && tail -n 2000 /var/log/kubelet.log" 60 >"$DIR/node-kubelet.log" ||
      die "the node has a journal or no /var/log/kubelet.log"
    local same
    same=$(jq -r '.lines[]' "$DIR/attach-logs.json" | grep -cxFf "$DIR/node-kubelet.log" || true)
    ((same > 0)) || die "no line of the answer is a line of the node's /var/log/kubelet.log"
    log "/v1/logs?query=kubelet: source file /var/log/kubelet.log, $(jq '.lines | length' "$DIR/attach-logs.json") lines ($same of them as the node's file has them), no journal on the node"
  fi
  # The audit trail: events are written after the answer; poll briefly.
  local create pf del
  for ((i = 0; i < 40; i++)); do
    create=$(jq -c --arg ns "$ns" --arg pod "$pod" 'select(.verb == "create" and .objectRef.resource == "pods"
        and (.objectRef.subresource // "") == "" and .objectRef.namespace == $ns
        and .responseObject.metadata.name == $pod)' "$DIR/audit.log" | head -n 1)
    pf=$(jq -c --arg ns "$ns" --arg pod "$pod" 'select(.objectRef.resource == "pods"
        and .objectRef.subresource == "portforward" and .objectRef.namespace == $ns
        and .objectRef.name == $pod)' "$DIR/audit.log" | head -n 1)
    del=$(jq -c --arg ns "$ns" --arg pod "$pod" 'select(.verb == "delete" and .objectRef.resource == "pods"
        and (.objectRef.subresource // "") == "" and .objectRef.namespace == $ns
        and .objectRef.name == $pod)' "$DIR/audit.log" | head -n 1)
    [[ -n $create && -n $pf && -n $del ]] && break
    sleep 0.5
  done
  [[ -n $create ]] || die "no audit event of the create of pod $ns/$pod"
  jq -e '.level == "RequestResponse" and .user.username == "nodetruth-dev-admin" and .responseStatus.code == 201
      and (.requestObject.spec.nodeName != null)' <<<"$create" >/dev/null ||
    die "the create of $pod is not the caller's RequestResponse event: $(jq -c '{level, user, responseStatus}' <<<"$create")"
  # the kubectl it ran (v1.32.4-dispatcher sends kubectl/v1.32.4: compare major.minor)
  jq -e --arg ua "kubectl/${kver%.*}." '.userAgent | startswith($ua)' <<<"$create" >/dev/null ||
    die "the create of $pod came from $(jq -r .userAgent <<<"$create"), not kubectl ${kver}"
  [[ -n $pf ]] || die "no pods/portforward audit event for $ns/$pod"
  jq -e '.level == "Metadata" and .user.username == "nodetruth-dev-admin"' <<<"$pf" >/dev/null ||
    die "the port-forward of $pod is not the caller's Metadata event: $(jq -c '{level, user, verb}' <<<"$pf")"
  [[ -n $del ]] || die "no audit event of the delete of pod $ns/$pod"
  jq '.responseObject' <<<"$create" >"$DIR/attach-pod-created.json"
  jq '.responseObject' <<<"$del" >"$DIR/attach-pod-deleted.json"
  log "audit: create (RequestResponse, $(jq -r .user.username <<<"$create")), pods/portforward (Metadata, verb $(jq -r .verb <<<"$pf")), delete of $pod"
  # The launcher deletes with --wait=false: the kubelet stops the agent (its grace period).
  wait_for 180 "pod $ns/$pod gone" bash -c \
    "! '$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n '$ns' get pod '$pod' 2>/dev/null | grep -q ."
  # kubelet's own delete, once the agent has stopped: its body is the pod's last status, the
  # agent's exit after SIGTERM within the pod's grace period
  local last
  for ((i = 0; i < 20; i++)); do
    last=$(jq -c --arg ns "$ns" --arg pod "$pod" --arg u "system:node:$NODE_NAME" 'select(.verb == "delete" and .objectRef.resource == "pods"
        and .objectRef.namespace == $ns and .objectRef.name == $pod and .user.username == $u)' "$DIR/audit.log" | tail -n 1)
    [[ -n $last ]] && break
    sleep 0.5
  done
  [[ -n $last ]] || die "no audit event of kubelet's delete of pod $ns/$pod"
  jq -e '.responseObject.status.containerStatuses[0].state.terminated | .exitCode == 0 and .reason == "Completed"' <<<"$last" >/dev/null ||
    die "the agent did not exit 0 when kubelet stopped it: $(jq -c '.responseObject.status.containerStatuses[0].state' <<<"$last")"
  log "kubelet stopped the agent: $(jq -c '.responseObject.status.containerStatuses[0].state.terminated | {exitCode, reason}' <<<"$last"), pod phase $(jq -r .responseObject.status.phase <<<"$last")"
  log "attach-check passed in $(since "$t0") s: pod $pod created, port-forwarded, answered, audited, stopped with exit 0, gone"
}

# TAP-like lines for the checks that assert many things (a precondition that fails still dies at once)
. scripts/cluster/tap.sh
tap_end() {
  local what=$1 t0=$2
  echo "1..$TAP_N"
  if ((TAP_FAILED)); then
    log "$what: $TAP_FAILED of $TAP_N failed ($(since "$t0") s)"
    return 1
  fi
  log "$what passed: $TAP_N of $TAP_N in $(since "$t0") s"
}

node_is_ready() { [[ $(K get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
node_ready() {
  for p in "${PROCS[@]}"; do alive "$p"; done
  node_pid >/dev/null || die "no node: run up without --no-node"
  node_is_ready || die "node $NODE_NAME is not Ready"
}

# guest SCRIPT [TIMEOUT]: runs SCRIPT as root in the node through guest/control.sh's command
# directory on the share (what vm.ts's exec does), prints its output, returns its status.
guest() {
  local script=$1 t=${2:-60} cmd id i rc
  cmd=$(realpath -ms "$DIR/node/share/cmd")
  [[ -d $cmd ]] || die "no $cmd: the node's command directory"
  # ids of their own: node.ts numbered its commands 0001, 0002, ...
  id=dc$(date +%s%N)$$
  printf '%s\n' "$script" >"$cmd/$id.tmp"
  mv "$cmd/$id.tmp" "$cmd/$id.$t.sh"
  for ((i = 0; i < (t + 20) * 10; i++)); do
    [[ -f $cmd/$id.rc ]] && break
    ((i % 50)) || node_pid >/dev/null || die "the node's qemu is gone"
    sleep 0.1
  done
  [[ -f $cmd/$id.rc ]] || die "the node did not answer a command within $((t + 20)) s: ${script%%$'\n'*}"
  rc=$(cat "$cmd/$id.rc")
  cat "$cmd/$id.out" 2>/dev/null || true
  rm -f "$cmd/$id".*
  return "$rc"
}

AGENT_NS=nodetruth
AGENT_SELECTOR=app.kubernetes.io/name=nodetruth,app.kubernetes.io/component=agent
CALLERS_NS=nodetruth-callers

# The DaemonSet as users apply it (deploy/daemonset/core), with the probes made to fit a
# TCG guest on a loaded host: a startupProbe (5 s period, 10 min in all) before the
# livenessProbe counts, and that probe given 10 s and 6 failures instead of 3 s and 3. The
# agent then takes minutes to listen, and the manifests' liveness probe (20 s x 3, no delay)
# killed it first every time (host load ~20: 7 restarts in 11 min, never Ready); once
# serving, a /healthz slower than 3 s three times in a row had it killed mid-check (load
# 25). Returns once its one pod is Ready. Sets AGENT_POD.
daemonset_up() {
  local i overlay=$DIR/daemonset-overlay
  mkdir -p "$overlay"
  cat >"$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="$overlay" "$TREE/deploy/daemonset/core")
patches:
  - target: {kind: DaemonSet, name: nodetruth}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/startupProbe
        value:
          httpGet: {path: /healthz, port: https, scheme: HTTPS}
          periodSeconds: 5
          timeoutSeconds: 3
          failureThreshold: 120
      - op: replace
        path: /spec/template/spec/containers/0/livenessProbe/timeoutSeconds
        value: 10
      - op: replace
        path: /spec/template/spec/containers/0/livenessProbe/failureThreshold
        value: 6
YAML
  for ((i = 1; ; i++)); do
    K apply -k "$overlay" >"$DIR/daemonset-apply.out" 2>&1 && break
    ((i < 3)) || { cat "$DIR/daemonset-apply.out" >&2; die "kubectl apply -k deploy/daemonset/core (+ startupProbe) failed $i times"; }
    sleep 1
  done
  # under TCG the agent takes tens of seconds to load before its first probe answers
  wait_for 900 "DaemonSet $AGENT_NS/nodetruth: one pod Ready, updated" bash -c \
    "[[ \$('$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n $AGENT_NS get ds nodetruth -o jsonpath='{.status.numberReady}/{.status.updatedNumberScheduled}') == 1/1 ]]" ||
    { K -n "$AGENT_NS" describe pods -l "$AGENT_SELECTOR" >&2; die "the DaemonSet's pod did not become Ready"; }
  AGENT_POD=$(K -n "$AGENT_NS" get pods -l "$AGENT_SELECTOR" -o json | jq -r '[.items[] | select(.metadata.deletionTimestamp == null
      and any(.status.conditions[]?; .type == "Ready" and .status == "True"))][0].metadata.name // empty')
  [[ -n $AGENT_POD ]] || die "no pod of the DaemonSet"
}

# The agent's port on the host: qemu's forward to the node's 10.0.2.15:7070 (node.ts).
# Its certificate is fetched and pinned by the public key its own log names, then curl
# checks it as usual for the node's address (its SAN). Sets AGENT_PORT, AGENT_CERT, AGENT_PIN.
agent_tls() {
  AGENT_PORT=$(jq -r '.agentPort // empty' "$DIR/node.json")
  [[ $AGENT_PORT =~ ^[0-9]+$ ]] || die "$DIR/node.json names no agentPort: run up again"
  AGENT_PIN=$(K -n "$AGENT_NS" logs "$AGENT_POD" | jq -r 'select(.tls.enabled == true) | .tls.publicKeyPin' 2>/dev/null | tail -n 1)
  AGENT_CERT=$DIR/agent-cert.pem
  openssl s_client -connect "127.0.0.1:$AGENT_PORT" </dev/null 2>/dev/null | openssl x509 >"$AGENT_CERT" 2>/dev/null || true
}

# agent_curl PATH TOKEN-FILE|- OUT FORMAT MAX-SECONDS: one request to the DaemonSet's agent
# on the node's address, TLS pinned; prints curl's FORMAT ("000" as the status: no answer)
agent_curl() {
  local auth=()
  [[ $2 == - ]] || auth=(-H "@$2")
  curl -sS -o "$3" -w "$4" --max-time "$5" --cacert "$AGENT_CERT" --pinnedpubkey "$AGENT_PIN" \
    --connect-to "$GUEST_ADDR:7070:127.0.0.1:$AGENT_PORT" "${auth[@]}" "https://$GUEST_ADDR:7070$1" 2>>"$DIR/curl.err" || true
}

# agent_get PATH TOKEN-FILE|- OUT: prints the HTTP status ("000": no answer). No answer,
# and 502/503/504 (the agent without API server access yet, or the API server's answer
# later than the agent waits: a TCG guest on a loaded host), are asked again for up to 3 min.
agent_get() {
  local code i
  for ((i = 0; i < 36; i++)); do
    code=$(agent_curl "$1" "$2" "$3" '%{http_code}' 120)
    [[ $code == 000 || $code == 50[234] ]] || break
    sleep 5
  done
  echo "$code"
}

# Callers: the ServiceAccounts oncall (bound to nodetruth-reader) and stranger (no binding)
# in $CALLERS_NS, their tokens from TokenRequest, and the scraper's from the Secret the
# token controller fills (deploy/daemonset/core/scraper.yaml); each as a curl header file.
callers() {
  K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $CALLERS_NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: oncall, namespace: $CALLERS_NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: stranger, namespace: $CALLERS_NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: nodetruth-reader-oncall}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: nodetruth-reader}
subjects: [{kind: ServiceAccount, name: oncall, namespace: $CALLERS_NS}]
YAML
  mkdir -p "$DIR/tokens"
  chmod 700 "$DIR/tokens"
  local sa
  for sa in oncall stranger; do
    (umask 077 && echo "Authorization: Bearer $(K -n "$CALLERS_NS" create token "$sa" --duration=2h)" >"$DIR/tokens/$sa")
  done
  wait_for 60 "the scraper's token in Secret nodetruth-scraper-token" bash -c \
    "[[ -n \$('$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n $AGENT_NS get secret nodetruth-scraper-token -o jsonpath='{.data.token}') ]]"
  (umask 077 && echo "Authorization: Bearer $(K -n "$AGENT_NS" get secret nodetruth-scraper-token -o jsonpath='{.data.token}' | base64 -d)" >"$DIR/tokens/scraper")
}

# `kubectl apply -k deploy/daemonset/core` unchanged (image ghcr.io/nodetruth/nodetruth:0.1.0,
# IfNotPresent: the tag is not latest, so the image loaded by up is used), its pod made by the
# DaemonSet controller and bound by the scheduler; the agent serves TLS on the node's address
# with --auth kubernetes and answers each caller as RBAC says, through the real TokenReview
# and SubjectAccessReview, which the API server's audit log shows the agent's ServiceAccount
# making; the agent's own audit lines name each caller.
daemonset_check() {
  local t0 code kernel uid out=$DIR/daemonset-answer ts
  node_ready
  t0=$(now)
  ts=$(date -u +%Y-%m-%dT%H:%M:%S)
  log "kubectl apply -k deploy/daemonset/core; the agent starts under TCG: a minute or more"
  daemonset_up
  tap OK "kubectl apply -k deploy/daemonset/core (+ startupProbe): pod $AGENT_NS/$AGENT_POD Ready after $(since "$t0") s"
  local pod
  pod=$(K -n "$AGENT_NS" get pod "$AGENT_POD" -o json)
  expect "pod on $NODE_NAME, podIP = hostIP = $GUEST_ADDR (hostNetwork)" \
    jq -e --arg n "$NODE_NAME" --arg ip "$GUEST_ADDR" '.spec.nodeName == $n and .status.podIP == $ip and .status.hostIP == $ip' <<<"$pod"
  expect "the image the manifests name, as loaded by up (ghcr.io/nodetruth/nodetruth:0.1.0, IfNotPresent)" \
    jq -e '.spec.containers[0].image == "ghcr.io/nodetruth/nodetruth:0.1.0" and .spec.containers[0].imagePullPolicy == "IfNotPresent"' <<<"$pod"
  uid=$(jq -r .metadata.uid <<<"$pod")
  # made by the DaemonSet controller (its own ServiceAccount: --use-service-account-credentials)
  # and bound by the scheduler
  local created bound
  created=$(jq -c --arg uid "$uid" 'select(.verb == "create" and .objectRef.resource == "pods"
      and (.objectRef.subresource // "") == "" and .responseObject.metadata.uid == $uid) | .user.username' "$DIR/audit.log" | head -n 1)
  expect "audit: the pod created by the DaemonSet controller ($created)" \
    test "$created" == '"system:serviceaccount:kube-system:daemon-set-controller"'
  bound=$(jq -c --arg n "$AGENT_POD" 'select(.objectRef.resource == "pods" and .objectRef.subresource == "binding"
      and .objectRef.name == $n) | .user.username' "$DIR/audit.log" | head -n 1)
  expect "audit: the pod bound by the scheduler ($bound)" test "$bound" == '"system:kube-scheduler"'

  agent_tls
  expect "the agent's log names its certificate's public key ($AGENT_PIN)" test -n "$AGENT_PIN"
  expect "a certificate on the node's $GUEST_ADDR:7070 (host port $AGENT_PORT)" test -s "$AGENT_CERT"
  expect "its SAN names the node's address $GUEST_ADDR" bash -c "openssl x509 -in '$AGENT_CERT' -noout -ext subjectAltName | grep -q 'IP Address:$GUEST_ADDR'"
  callers
  kernel=$(K get node "$NODE_NAME" -o jsonpath='{.status.nodeInfo.kernelVersion}')
  # path caller status: each through TLS verified against that certificate and pinned by the key
  local row path who want tok
  while read -r path who want; do
    tok=-
    [[ $who == none ]] || tok=$DIR/tokens/$who
    code=$(agent_get "$path" "$tok" "$out")
    if [[ $code == "$want" ]]; then
      tap OK "GET $path as $who: $code"
    else
      tap FAIL "GET $path as $who: $code, want $want" "$(head -c 600 "$out" 2>/dev/null; tail -n 2 "$DIR/curl.err" 2>/dev/null)"
    fi
    case $path/$code in
      /v1/node/200) expect "/v1/node's kernelRelease is the kernel the kubelet reports ($kernel)" \
        jq -e --arg k "$kernel" '.kernelRelease == $k' "$out" ;;
      /metrics/200) expect "/metrics is Prometheus text (nodetruth_ series)" grep -q '^nodetruth_' "$out" ;;
      */401) expect "the 401 says a bearer token is required" grep -q 'bearer token' "$out" ;;
    esac
  done <<'ROWS'
/healthz none 200
/v1/node none 401
/v1/node stranger 403
/v1/node oncall 200
/metrics none 401
/metrics stranger 403
/metrics oncall 403
/metrics scraper 200
/v1/node scraper 403
ROWS

  # The API server's audit log: the agent's ServiceAccount made the reviews (Metadata level:
  # the reviewed token and the SAR's subject are not in it).
  local sa=system:serviceaccount:$AGENT_NS:nodetruth tr sar i
  for ((i = 0; i < 20; i++)); do
    tr=$(jq -c --arg sa "$sa" --arg ts "$ts" 'select(.objectRef.resource == "tokenreviews" and .verb == "create"
        and .user.username == $sa and .stageTimestamp >= $ts and .responseStatus.code == 201)' "$DIR/audit.log" | wc -l)
    sar=$(jq -c --arg sa "$sa" --arg ts "$ts" 'select(.objectRef.resource == "subjectaccessreviews" and .verb == "create"
        and .user.username == $sa and .stageTimestamp >= $ts and .responseStatus.code == 201)' "$DIR/audit.log" | wc -l)
    ((tr >= 3 && sar >= 4)) && break
    sleep 0.5
  done
  # three tokens reviewed (oncall, stranger, scraper); SARs at least: oncall nodes/nodetruth and
  # nodes/metrics, stranger one, scraper nodes/metrics and nodes/nodetruth (refusals are cached)
  expect "audit: $sa created tokenreviews ($tr, >= 3: one per token)" test "$tr" -ge 3
  expect "audit: $sa created subjectaccessreviews ($sar, >= 4)" test "$sar" -ge 4
  expect "audit: the reviews at Metadata level" bash -c "jq -e -s --arg sa '$sa' '[.[] | select(.user.username == \$sa and (.objectRef.resource == \"tokenreviews\" or .objectRef.resource == \"subjectaccessreviews\"))] | length > 0 and all(.level == \"Metadata\")' '$DIR/audit.log'"

  # The agent's own audit line per request (its stdout), naming each caller.
  K -n "$AGENT_NS" logs "$AGENT_POD" >"$DIR/daemonset-agent.log"
  local u=system:serviceaccount:$CALLERS_NS
  while read -r path want user; do
    expect "the agent's audit line: GET $path $want user $user" \
      jq -e -s --arg p "$path" --argjson s "$want" --arg u "$user" \
        'any(.[]; .audit != null and .audit.route == $p and .audit.status == $s
          and (if $u == "null" then .audit.user == null else .audit.user == $u end))' "$DIR/daemonset-agent.log"
  done <<ROWS
/v1/node 200 $u:oncall
/v1/node 403 $u:stranger
/v1/node 401 null
/metrics 403 $u:oncall
/metrics 200 system:serviceaccount:$AGENT_NS:nodetruth-scraper
ROWS
  tap_end daemonset-check "$t0"
}

DRIFT_NS=nodetruth-drift

# drift_get: /v1/node/drift as oncall into $DIR/drift.json; prints the status.
drift_get() { agent_get /v1/node/drift "$DIR/tokens/oncall" "$DIR/drift.json"; }

# wait_drift SECONDS JQ-FILTER [ARGS...]: asks /v1/node/drift every 5 s until the filter holds.
wait_drift() {
  local secs=$1 deadline
  shift
  deadline=$(($(date +%s) + secs))
  while :; do
    [[ $(drift_get) == 200 ]] && jq -e "$@" "$DIR/drift.json" >/dev/null 2>&1 && return 0
    (($(date +%s) < deadline)) || return 1
    sleep 5
  done
}

kubelet_ctl() { guest "systemctl $1 kubelet.service; systemctl is-active kubelet.service" 90; }

# kubelet_reachable true|false: /v1/node's kubelet.reachable says so within a minute
kubelet_reachable() {
  local i
  for ((i = 0; i < 12; i++)); do
    [[ $(agent_get /v1/node "$DIR/tokens/oncall" "$DIR/drift-node.json") == 200 ]] &&
      jq -e --argjson r "$1" '.kubelet.reachable == $r' "$DIR/drift-node.json" >/dev/null && return 0
    sleep 5
  done
  return 1
}

# sandbox_no_container UID: the agent's runtime view has the pod's sandbox and no container of it
sandbox_no_container() {
  [[ $(agent_get /v1/pods "$DIR/tokens/oncall" "$DIR/drift-pods.json") == 200 ]] &&
    [[ $(agent_get /v1/containers "$DIR/tokens/oncall" "$DIR/drift-containers.json") == 200 ]] &&
    jq -e --arg u "$1" 'any(.items[]; .uid == $u)' "$DIR/drift-pods.json" &&
    jq -e --arg u "$1" 'all(.items[]; .podUid != $u)' "$DIR/drift-containers.json"
}

# container_running UID: the agent's runtime view has a running container of that pod
container_running() {
  [[ $(agent_get /v1/containers "$DIR/tokens/oncall" "$DIR/drift-containers.json") == 200 ]] &&
    jq -e --arg u "$1" 'any(.items[]; .podUid == $u and .state == "CONTAINER_RUNNING")' "$DIR/drift-containers.json"
}

# Drift against the real API server, read by the DaemonSet's agent (daemonset-check's
# manifests, applied if missing) as oncall: a pod the runtime cannot start, a pod bound while
# kubelet is stopped, a pod force-deleted from the API while kubelet is stopped (its sandbox
# and container run on), and kubelet's own absence in /v1/node; kubelet started again at the
# end and the drift gone.
drift_check() {
  local t0 v uid_img uid_rc uid_victim uid_late
  node_ready
  t0=$(now)
  daemonset_up
  agent_tls
  callers
  [[ $(agent_get /v1/node "$DIR/tokens/oncall" "$DIR/drift-node.json") == 200 ]] ||
    die "the agent does not answer /v1/node as oncall: run daemonset-check"
  K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $DRIFT_NS}
YAML
  wait_for 60 "ServiceAccount default in $DRIFT_NS" K -n "$DRIFT_NS" get serviceaccount default
  local spec='restartPolicy: Never
  terminationGracePeriodSeconds: 2
  automountServiceAccountToken: false'
  # victim runs; never-image has an image the node does not hold and may not pull; no-runtime
  # has a RuntimeClass whose handler containerd does not have, so its sandbox is never made
  # (a RuntimeClass that does not exist is refused by the API server's admission)
  K apply -f - >/dev/null <<YAML
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nodetruth-absent}
handler: nodetruth-absent
---
apiVersion: v1
kind: Pod
metadata: {name: victim, namespace: $DRIFT_NS}
spec:
  $spec
  containers: [{name: sleep, image: localhost/e2e/busybox:1, imagePullPolicy: Never, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: never-image, namespace: $DRIFT_NS}
spec:
  $spec
  containers: [{name: app, image: localhost/e2e/never-imported:1, imagePullPolicy: Never}]
---
apiVersion: v1
kind: Pod
metadata: {name: no-runtime, namespace: $DRIFT_NS}
spec:
  $spec
  runtimeClassName: nodetruth-absent
  containers: [{name: app, image: localhost/e2e/busybox:1, imagePullPolicy: Never, command: [sleep, "3600"]}]
YAML
  # a sandbox and a container each take minutes in a TCG guest on a loaded host (sid, host
  # load 15-20: the victim still ContainerCreating after 300 s, kubelet's housekeeping 9 s)
  wait_for 900 "$DRIFT_NS/victim Running" bash -c \
    "'$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n $DRIFT_NS get pod victim -o jsonpath='{.status.phase}' | grep -qx Running" ||
    { K -n "$DRIFT_NS" describe pod victim >&2; die "the victim pod did not run"; }
  wait_for 900 "$DRIFT_NS/never-image ErrImageNeverPull" bash -c \
    "'$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n $DRIFT_NS get pod never-image -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}' | grep -qx ErrImageNeverPull" ||
    { K -n "$DRIFT_NS" describe pod never-image >&2; die "never-image did not reach ErrImageNeverPull"; }
  uid_img=$(K -n "$DRIFT_NS" get pod never-image -o jsonpath='{.metadata.uid}')
  uid_rc=$(K -n "$DRIFT_NS" get pod no-runtime -o jsonpath='{.metadata.uid}')
  uid_victim=$(K -n "$DRIFT_NS" get pod victim -o jsonpath='{.metadata.uid}')
  K -n "$DRIFT_NS" get pods -o wide >&2
  K -n "$DRIFT_NS" get events --field-selector involvedObject.name=no-runtime -o custom-columns=REASON:.reason,MESSAGE:.message --no-headers >&2 || true
  wait_for 120 "an event on no-runtime" bash -c \
    "'$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n $DRIFT_NS get events --field-selector involvedObject.name=no-runtime -o name | grep -q ." || true
  expect "no-runtime bound to $NODE_NAME, Pending" bash -c \
    "[[ \$('$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n $DRIFT_NS get pod no-runtime -o jsonpath='{.spec.nodeName}/{.status.phase}') == $NODE_NAME/Pending ]]"

  # (a) pods the runtime never started
  if wait_drift 120 --arg u "$uid_rc" 'any(.boundButAbsent[]; .uid == $u)'; then
    tap OK "drift: no-runtime (RuntimeClass absent, no sandbox) is boundButAbsent: $(jq -c --arg u "$uid_rc" '.boundButAbsent[] | select(.uid == $u) | {name, phase, deleting}' "$DIR/drift.json")"
  else
    tap FAIL "drift: no-runtime (RuntimeClass absent, no sandbox) is boundButAbsent" "$(head -c 1500 "$DIR/drift.json")"
  fi
  cp "$DIR/drift.json" "$DIR/drift-a.json"
  # never-image: kubelet made its sandbox and the API says the container waits
  # (ErrImageNeverPull, no container id): the two views agree, so it is not drift
  expect "runtime: never-image has a sandbox (/v1/pods) and no container (/v1/containers)" sandbox_no_container "$uid_img"
  expect "drift: never-image in neither boundButAbsent nor stateMismatches (API and runtime agree it never started)" \
    jq -e --arg u "$uid_img" 'all(.boundButAbsent[]; .uid != $u) and all(.stateMismatches[]; .podUid != $u)' "$DIR/drift-a.json"
  expect "drift: victim running in both views, not reported" \
    jq -e --arg u "$uid_victim" 'all(.boundButAbsent[]; .uid != $u) and all(.orphanSandboxes[]; .uid != $u) and all(.stateMismatches[]; .podUid != $u)' "$DIR/drift-a.json"
  if kubelet_reachable true; then
    tap OK "/v1/node: kubelet reachable while it runs ($(jq -c '.kubelet | {status, body}' "$DIR/drift-node.json"))"
  else
    tap FAIL "/v1/node: kubelet reachable while it runs" "$(jq -c '.kubelet' "$DIR/drift-node.json" 2>/dev/null)"
  fi

  # (c) kubelet stopped: its containers run on; the node stays Ready in the API for the
  # controller-manager's grace period (5 min)
  KUBELET_STOPPED=1
  trap '[[ ${KUBELET_STOPPED:-0} == 1 ]] && { log "starting kubelet again"; kubelet_ctl start >&2 || true; }' EXIT
  v=$(kubelet_ctl stop 2>&1) || true
  expect "kubelet stopped in the guest (systemctl: $v)" test "$v" == inactive
  if kubelet_reachable false; then
    tap OK "/v1/node: kubelet unreachable ($(jq -c '.kubelet.error' "$DIR/drift-node.json"))"
  else
    tap FAIL "/v1/node: kubelet unreachable" "$(jq -c '.kubelet' "$DIR/drift-node.json" 2>/dev/null)"
  fi
  # a pod the scheduler binds to the node while its kubelet is away
  K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: late, namespace: $DRIFT_NS}
spec:
  $spec
  containers: [{name: sleep, image: localhost/e2e/busybox:1, imagePullPolicy: Never, command: [sleep, "3600"]}]
YAML
  wait_for 60 "$DRIFT_NS/late bound" bash -c \
    "[[ -n \$('$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n $DRIFT_NS get pod late -o jsonpath='{.spec.nodeName}') ]]"
  uid_late=$(K -n "$DRIFT_NS" get pod late -o jsonpath='{.metadata.uid}')

  # (b) the victim force-deleted from the API: nobody stops its containers
  K -n "$DRIFT_NS" delete pod victim --force --grace-period=0 >/dev/null 2>&1
  expect "victim gone from the API at once (force delete)" bash -c \
    "! '$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n $DRIFT_NS get pod victim >/dev/null 2>&1"
  if wait_drift 120 --arg v "$uid_victim" --arg l "$uid_late" \
    'any(.orphanSandboxes[]; .uid == $v) and any(.boundButAbsent[]; .uid == $l)'; then
    tap OK "drift: victim an orphan sandbox ($(jq -c --arg v "$uid_victim" '.orphanSandboxes[] | select(.uid == $v) | {namespace, name, state}' "$DIR/drift.json")), late boundButAbsent ($(jq -c --arg l "$uid_late" '.boundButAbsent[] | select(.uid == $l) | {name, phase}' "$DIR/drift.json"))"
  else
    tap FAIL "drift: victim an orphan sandbox, late boundButAbsent" "$(head -c 2000 "$DIR/drift.json")"
  fi
  cp "$DIR/drift.json" "$DIR/drift-bc.json"
  expect "drift: not inSync" jq -e '.inSync == false' "$DIR/drift-bc.json"
  expect "runtime: victim's container still running with no API pod (/v1/containers)" container_running "$uid_victim"

  # kubelet back: it stops the orphan and starts late
  v=$(kubelet_ctl start 2>&1) || true
  expect "kubelet started again (systemctl: $v)" test "$v" == active
  KUBELET_STOPPED=0
  if wait_drift 600 --arg v "$uid_victim" --arg l "$uid_late" \
    'all(.orphanSandboxes[]; .uid != $v) and all(.boundButAbsent[]; .uid != $l)'; then
    tap OK "drift: after kubelet's restart the orphan is gone and late has its sandbox"
  else
    tap FAIL "drift: after kubelet's restart the orphan is gone and late has its sandbox" "$(head -c 2000 "$DIR/drift.json")"
  fi
  expect "/v1/node: kubelet reachable again" kubelet_reachable true
  K delete namespace "$DRIFT_NS" --wait=false >/dev/null
  K delete runtimeclass nodetruth-absent --wait=false >/dev/null
  tap_end drift-check "$t0"
}

# expired_copy NAME: $DIR/node/share/kube/NAME-expired.crt, a copy of $DIR/pki/NAME.crt (its
# key, subject and extensions, signed by the cluster's CA) valid from 31 days ago until 1 day
# ago. `openssl ca` because `openssl x509` (3.0) cannot date a certificate in the past.
expired_copy() {
  local name=$1 ca=$DIR/pki/expired-ca
  rm -rf "$ca"
  mkdir -p "$ca"
  : >"$ca/index.txt"
  openssl rand -hex 16 >"$ca/serial"
  printf '%s\n' '[ca]' 'default_ca = expired' '[expired]' "database = $ca/index.txt" "new_certs_dir = $ca" \
    "serial = $ca/serial" 'default_md = sha256' 'policy = any' 'unique_subject = no' 'copy_extensions = copyall' \
    '[any]' 'organizationName = optional' 'commonName = supplied' >"$ca/ca.cnf"
  openssl x509 -x509toreq -copy_extensions copyall -in "$DIR/pki/$name.crt" -signkey "$DIR/pki/$name.key" -out "$ca/$name.csr" 2>/dev/null &&
    openssl ca -batch -config "$ca/ca.cnf" -cert "$DIR/pki/ca.crt" -keyfile "$DIR/pki/ca.key" -in "$ca/$name.csr" \
      -out "$DIR/node/share/kube/$name-expired.crt" -notext -preserveDN \
      -startdate "$(date -u -d '31 days ago' +%Y%m%d%H%M%SZ)" -enddate "$(date -u -d '1 day ago' +%Y%m%d%H%M%SZ)" 2>/dev/null
  local rc=$?
  rm -rf "$ca"
  return "$rc"
}

. scripts/cluster/cert.sh

# agent_until PATH OUT FILTER [ARG VALUE]: the agent's answer to PATH (as oncall, kept in OUT)
# asked again for up to 2 min until jq FILTER gives something; prints it (the node facts and
# kubelet's journal can miss triage's deadline on a starved guest)
agent_until() {
  local path=$1 out=$2 filter=$3 i
  shift 3
  for ((i = 0; i < 24; i++)); do
    [[ $(agent_get "$path" "$DIR/tokens/oncall" "$out") == 200 ]] && jq -ce "$@" "$filter // empty" "$out" && return 0
    sleep 5
  done
  return 1
}
# cert_finding ROLE: /v1/triage's kubelet-cert-expired finding about kubelet's ROLE certificate
cert_finding() {
  agent_until /v1/triage "$DIR/certs-triage.json" \
    '[.findings[] | select(.id == "kubelet-cert-expired" and (.title | startswith("kubelet'"'"'s \($r) certificate")))][0]' --arg r "$1"
}
# cert_of ROLE: kubelet's ROLE certificate in the agent's /v1/node
cert_of() { agent_until /v1/node "$DIR/certs-node.json" '[.facts.certificates[]? | select(.role == $r)][0]' --arg r "$1"; }

# kubelet_serves_until: the NotAfter of the certificate kubelet serves (qemu's forward to its port), as not_after writes it
kubelet_serves_until() {
  openssl s_client -connect "127.0.0.1:$KUBELET_PORT" </dev/null 2>/dev/null | openssl x509 >"$DIR/certs-served.pem" 2>/dev/null &&
    not_after "$DIR/certs-served.pem"
}

# no_cert_finding: /v1/triage read the node facts and has no kubelet-cert-expired
no_cert_finding() {
  [[ $(agent_get /v1/triage "$DIR/tokens/oncall" "$DIR/certs-triage.json") == 200 ]] &&
    jq -e '.sources.facts.ok and all(.findings[]; .id != "kubelet-cert-expired")' "$DIR/certs-triage.json" >/dev/null
}

# pod_logs: `kubectl logs` of the agent's pod, through the API server and kubelet; its status
pod_logs() { K -n "$AGENT_NS" logs "$AGENT_POD" --tail=1 >"$DIR/certs-logs.out" 2>&1; }

# kubelet's certificates expired, through the real kubelet, asked of the DaemonSet's agent on
# the node's address as oncall (a port-forward goes through kubelet). kubelet is restarted on
# copies of its certificates whose NotAfter is a day past (expired_copy). First the serving
# one: the API server does not check it (no --kubelet-certificate-authority, as kubeadm
# leaves it), so `kubectl logs` still works. Then the client one: the API server refuses
# kubelet (401), and kubelet, which asks it (SubjectAccessReview) whether a caller may use
# its API, refuses the API server's logs, exec and port-forward. Each time /v1/node has the
# file's NotAfter and /v1/triage a critical kubelet-cert-expired. kubelet's own certificates
# come back at the end, and by the exit trap.
cert_check() {
  local t0 v want served c f
  node_ready
  t0=$(now)
  daemonset_up
  agent_tls
  callers
  expired_copy kubelet-serving && expired_copy kubelet || die "openssl ca: the expired copies of kubelet's certificates"
  local pki=/etc/kubernetes/pki certs=/var/lib/kubelet/pki restore
  # kubelet's own files back: the serving certificate, the client link's target, then a restart
  restore="[ -f $pki/kubelet-serving.crt.own ] && mv $pki/kubelet-serving.crt.own $pki/kubelet-serving.crt
[ -f /share/kube/kubelet-client-own ] && ln -sfn \"\$(cat /share/kube/kubelet-client-own)\" $certs/kubelet-client-current.pem
rm -f $certs/kubelet-client-expired.pem /share/kube/kubelet-client-own
systemctl restart kubelet.service; systemctl is-active kubelet.service"
  trap 'log "kubelet gets its own certificates back"; guest "$restore" 90 >&2 || true' EXIT

  # (a) the serving certificate expired
  v=$(guest "cp -p $pki/kubelet-serving.crt $pki/kubelet-serving.crt.own && install -m 644 /share/kube/kubelet-serving-expired.crt $pki/kubelet-serving.crt
systemctl restart kubelet.service; systemctl is-active kubelet.service" 90 2>&1) || true
  expect "kubelet restarted on an expired serving certificate (systemctl: $v)" test "$v" == active
  want=$(not_after "$DIR/node/share/kube/kubelet-serving-expired.crt")
  wait_for 120 "kubelet serving again" kubelet_serves_until || true
  served=$(kubelet_serves_until) || true
  expect "kubelet serves it on :$KUBELET_PORT (NotAfter $served)" test "$served" == "$want"
  c=$(cert_of serving) || true
  expect "/v1/node: the serving certificate expired $want ($(jq -c '{path, notAfter, secondsLeft}' <<<"${c:-{\}}"))" \
    jq -e --arg na "$want" '.path == "/etc/kubernetes/pki/kubelet-serving.crt" and .notAfter == $na and .secondsLeft < 0' <<<"${c:-{\}}"
  f=$(cert_finding serving) || true
  expect "/v1/triage kubelet-cert-expired, critical: $(jq -r '.title + ": " + .detail' <<<"${f:-{\}}" | head -c 300)" \
    jq -e --arg na "$want" '.severity == "critical" and .title == "kubelet'"'"'s serving certificate expired \($na)"
      and any(.evidence[]; .path == "/etc/kubernetes/pki/kubelet-serving.crt")' <<<"${f:-{\}}"
  if wait_for 120 "kubectl logs of $AGENT_POD" pod_logs; then
    tap OK "kubectl logs through the API server still works: it does not check kubelet's serving certificate"
  else
    tap FAIL "kubectl logs through the API server with kubelet's serving certificate expired" "$(tail -n 3 "$DIR/certs-logs.out")"
  fi

  # (b) the client certificate expired (the serving one its own again): the dated file kubelet's
  # rotation would write, the link the kubeconfig names pointing to it
  v=$(guest "mv $pki/kubelet-serving.crt.own $pki/kubelet-serving.crt
readlink $certs/kubelet-client-current.pem >/share/kube/kubelet-client-own
key=\$(sed -n '/-BEGIN .*PRIVATE KEY-/,/-END .*PRIVATE KEY-/p' $certs/kubelet-client-current.pem)
(umask 077 && { cat /share/kube/kubelet-expired.crt; echo \"\$key\"; } >$certs/kubelet-client-expired.pem)
ln -sfn kubelet-client-expired.pem $certs/kubelet-client-current.pem
systemctl restart kubelet.service; systemctl is-active kubelet.service" 90 2>&1) || true
  expect "kubelet restarted on an expired client certificate (systemctl: $v)" test "$v" == active
  want=$(not_after "$DIR/node/share/kube/kubelet-expired.crt")
  c=$(cert_of client) || true
  expect "/v1/node: the client certificate, the link's new target, expired $want ($(jq -c '{target, notAfter, secondsLeft}' <<<"${c:-{\}}"))" \
    jq -e --arg na "$want" '.path == "/var/lib/kubelet/pki/kubelet-client-current.pem" and .target == "/var/lib/kubelet/pki/kubelet-client-expired.pem"
      and .notAfter == $na and .secondsLeft < 0' <<<"${c:-{\}}"
  f=$(cert_finding client) || true
  expect "/v1/triage kubelet-cert-expired, critical: $(jq -r '.title + ": " + .detail' <<<"${f:-{\}}" | head -c 300)" \
    jq -e --arg na "$want" '.severity == "critical" and .title == "kubelet'"'"'s client certificate expired \($na)"' <<<"${f:-{\}}"
  if wait_for 120 "kubectl logs of $AGENT_POD refused by kubelet's authorization" bash -c "! '$BIN/kubectl' --kubeconfig='$DIR/kubeconfig' -n $AGENT_NS logs $AGENT_POD --tail=1 >'$DIR/certs-logs.out' 2>&1 && grep -q 'Authorization error' '$DIR/certs-logs.out'"; then
    tap OK "kubectl logs refused: kubelet cannot ask the API server who may read ($(tail -n 1 "$DIR/certs-logs.out" | head -c 300))"
  else
    tap FAIL "kubectl logs refused while kubelet's client certificate is expired" "$(tail -n 3 "$DIR/certs-logs.out")"
  fi
  # kubelet's journal, as the agent reads it: the API server's 401s
  f=$(agent_until /v1/triage "$DIR/certs-triage.json" '[.findings[] | select(.id == "kubelet-api-unauthorized")][0]') || true
  expect "/v1/triage kubelet-api-unauthorized from kubelet's journal: $(jq -r '.title + ": " + .detail' <<<"${f:-{\}}" | head -c 200) ($(jq -c '[.evidence[]? | .excerpt][0]' <<<"${f:-{\}}" | head -c 300))" \
    jq -e '.severity == "critical" and any(.evidence[]; .source == "journal" and (.excerpt | contains("Unauthorized")))' <<<"${f:-{\}}"

  # kubelet's own certificates back
  v=$(guest "$restore" 90 2>&1) || true
  trap - EXIT
  expect "kubelet restarted on its own certificates (systemctl: $v)" test "$v" == active
  expect "kubectl logs works again" wait_for 180 "kubectl logs of $AGENT_POD" pod_logs
  # the node controller marked the node NotReady while kubelet could not renew its lease
  expect "node $NODE_NAME Ready again" wait_for 180 "node $NODE_NAME Ready" node_is_ready
  c=$(cert_of client) || true
  expect "/v1/node: the client certificate valid again ($(jq -c '{target, secondsLeft}' <<<"${c:-{\}}"))" jq -e '.secondsLeft > 0' <<<"${c:-{\}}"
  expect "/v1/triage: no kubelet-cert-expired" wait_for 120 "/v1/triage without kubelet-cert-expired" no_cert_finding
  tap_end cert-check "$t0"
}

# agent_once PATH OUT: one request as oncall, never asked again; prints "STATUS SECONDS"
agent_once() { agent_curl "$1" "$DIR/tokens/oncall" "$2" '%{http_code} %{time_total}' 60; }

containerd_signal() { guest "kill -$1 \"\$(systemctl show -p MainPID --value containerd.service)\"" 30; }

# A wedged runtime under the real kubelet: containerd frozen with SIGSTOP in the node, the
# DaemonSet's agent asked as oncall. The runtime routes answer 504 within the CRI deadline
# (2 s) plus the slack a TCG guest needs; what does not need the runtime (cgroups, the
# agent's own container's log file and processes) answers 200; /v1/triage names
# runtime-not-answering; after SIGCONT the runtime routes answer 200 again. The freeze is
# kept under a minute: kubelet's PLEG calls the node unhealthy after three.
runtime_check() {
  local t0 cid pid r code secs path
  local work=$DIR/runtime-check
  node_ready
  t0=$(now)
  daemonset_up
  agent_tls
  callers
  rm -rf "$work"
  mkdir -p "$work"
  [[ $(agent_get /v1/containers "$DIR/tokens/oncall" "$work/containers.json") == 200 ]] ||
    die "the agent does not answer /v1/containers as oncall: run daemonset-check"
  cid=$(jq -r --arg p "$AGENT_POD" '[.items[] | select(.podName == $p and .state == "CONTAINER_RUNNING")][0].id // empty' "$work/containers.json")
  [[ -n $cid ]] || die "the agent's own container ($AGENT_POD) is not in /v1/containers"
  [[ $(agent_get "/v1/containers/$cid/processes" "$DIR/tokens/oncall" "$work/processes-before.json") == 200 ]] ||
    die "/v1/containers/{id}/processes of the agent's container did not answer"
  pid=$(jq -r '[.items[].pid][0] // empty' "$work/processes-before.json")

  CONTAINERD_STOPPED=1
  trap '[[ ${CONTAINERD_STOPPED:-0} == 1 ]] && { log "containerd continued"; containerd_signal CONT >&2 || true; }' EXIT
  containerd_signal STOP
  for path in /v1/runtime /v1/containers /v1/pods "/v1/containers/$cid"; do
    read -r code secs <<<"$(agent_once "$path" "$work/wedged.json")"
    if [[ $code == 504 ]] && awk -v s="$secs" 'BEGIN { exit !(s < 12) }' && jq -e '.type | length > 0' "$work/wedged.json" >/dev/null 2>&1; then
      tap OK "containerd stopped: GET ${path/$cid/\{id\}} answers 504 in $secs s ($(jq -r .code "$work/wedged.json"))"
    else
      tap FAIL "containerd stopped: GET ${path/$cid/\{id\}} answers 504 within the CRI deadline and its slack (12 s)" "$code in $secs s: $(head -c 400 "$work/wedged.json")"
    fi
  done
  read -r code secs <<<"$(agent_once /v1/cgroups "$work/cgroups.json")"
  expect "containerd stopped: GET /v1/cgroups answers 200 ($code in $secs s)" \
    jq -e --arg p "$(K -n "$AGENT_NS" get pod "$AGENT_POD" -o jsonpath='{.metadata.uid}')" 'any(.items[]; .podUid == $p)' "$work/cgroups.json"
  read -r code secs <<<"$(agent_once "/v1/containers/$cid/logs?tailLines=3" "$work/logs.txt")"
  expect "containerd stopped: the agent's own container log answers 200 from its file ($code in $secs s)" \
    bash -c "[[ $code == 200 ]] && [[ -s '$work/logs.txt' ]]"
  read -r code secs <<<"$(agent_once "/v1/containers/$cid/processes" "$work/processes.json")"
  expect "containerd stopped: its processes answer 200 from the cgroup, pid $pid among them ($code in $secs s)" \
    jq -e --argjson p "${pid:-0}" 'any(.items[]; .pid == $p)' "$work/processes.json"
  read -r code secs <<<"$(agent_once /v1/triage "$work/triage.json")"
  if [[ $code == 200 ]] && jq -e 'any(.findings[]; .id == "runtime-not-answering")' "$work/triage.json" >/dev/null 2>&1; then
    tap OK "containerd stopped: /v1/triage finds runtime-not-answering ($(jq -r '[.findings[] | select(.id == "runtime-not-answering")][0].title' "$work/triage.json"))"
  else
    tap FAIL "containerd stopped: /v1/triage finds runtime-not-answering" "$code: $(jq -c '[.findings[]?.id]' "$work/triage.json" 2>/dev/null | head -c 600)"
  fi
  containerd_signal CONT
  CONTAINERD_STOPPED=0
  local t1 ok=0
  t1=$(now)
  for ((r = 0; r < 60; r++)); do
    read -r code secs <<<"$(agent_once /v1/runtime "$work/runtime.json")"
    [[ $code == 200 ]] && { ok=1; break; }
    sleep 1
  done
  if ((ok)) && [[ $(agent_get /v1/containers "$DIR/tokens/oncall" "$work/containers-after.json") == 200 ]] &&
    [[ $(agent_get /v1/pods "$DIR/tokens/oncall" "$work/pods-after.json") == 200 ]]; then
    tap OK "containerd continued: the runtime routes answer 200 again ($(since "$t1") s after SIGCONT)"
  else
    tap FAIL "containerd continued: the runtime routes answer 200 again within a minute" "last: $code"
  fi
  node_ready
  tap OK "the node is Ready after the freeze"
  tap_end runtime-check "$t0"
}

# The fleet command's check (scripts/cluster/fleet-check.sh, its own) against this cluster.
fleet_check() {
  # the tree's own copy (it runs that tree's src/cli.ts), else this checkout's
  local f=$TREE/scripts/cluster/fleet-check.sh
  [[ -f $f ]] || f=scripts/cluster/fleet-check.sh
  [[ -f $f ]] || die "no scripts/cluster/fleet-check.sh"
  node_ready
  KUBECONFIG="$(realpath "$DIR")/kubeconfig" PATH="$BIN:$PATH" NODETRUTH_DEV_CLUSTER_DIR="$(realpath "$DIR")" \
    NODETRUTH_DEV_NODE="$NODE_NAME" NODETRUTH_KUBE_BIN="$BIN" bash "$f" "$@"
}

# The workload scenarios (scripts/cluster/workload-check.sh, its own) as Pods the real kubelet
# runs, asked of the DaemonSet's agent (applied here if missing, with the probes a TCG node needs).
workload_check() {
  local f=$TREE/scripts/cluster/workload-check.sh
  [[ -f $f ]] || f=scripts/cluster/workload-check.sh
  node_ready
  daemonset_up
  KUBECONFIG="$(realpath "$DIR")/kubeconfig" PATH="$BIN:$PATH" NODETRUTH_DEV_CLUSTER_DIR="$(realpath "$DIR")" \
    NODETRUTH_DEV_NODE="$NODE_NAME" bash "$f"
}

# down and check use the binaries `up` ran, never a new build.
recorded_bin() {
  [[ -f $DIR/bin ]] || die "no $DIR/bin: nothing was started from $DIR"
  BIN=$(cat "$DIR/bin")
}

# One function and one line: bash reads a script as it runs it, and this file may be edited
# while a long `up` runs; all of it is parsed before the command starts.
dispatch() {
  case ${1:-} in
  up) shift; up "$@" ;;
  down) recorded_bin && down ;;
  check) recorded_bin && check ;;
  attach-check) shift; recorded_bin && attach_check "$@" ;;
  daemonset-check) recorded_bin && daemonset_check ;;
  drift-check) recorded_bin && drift_check ;;
  cert-check) recorded_bin && cert_check ;;
  fleet-check) shift; recorded_bin && fleet_check "$@" ;;
  workload-check) recorded_bin && workload_check ;;
  runtime-check) recorded_bin && runtime_check ;;
  guest) shift; guest "$@" ;;
  *) usage ;;
  esac
}
dispatch "$@"; exit $?
