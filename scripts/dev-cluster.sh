#!/usr/bin/env bash
# A real single-node Kubernetes on this machine, from the binaries scripts/kube-build.sh
# builds (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl):
# the control plane as host processes, the node as the e2e guest under qemu (its containerd,
# the release's kubelet, a CNI bridge), through test/e2e/cluster/node.ts.
#
#   bash scripts/dev-cluster.sh up [--suite bookworm|sid] [--no-node]
#                                       # start; returns with the cluster running, node Ready
#   bash scripts/dev-cluster.sh check   # namespace + pod round trip, audited; with the node,
#                                       # a busybox pod Running and its logs
#   bash scripts/dev-cluster.sh attach-check [--kubectl FILE]
#                                       # the launcher (dist/cli.js attach) against node1,
#                                       # with the release's kubectl or FILE's first on PATH:
#                                       # answers, the audit trail, the pod deleted
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
# $NODETRUTH_DEV_KUBELET_PORT (10250, the same port in the guest); controller-manager and
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
# Who reached a pod (port-forward, exec, attach), the agent's TokenReviews and
# SubjectAccessReviews, and every create/delete of a pod or DaemonSet with its body.
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources:
      - group: ""
        resources: [pods/portforward, pods/exec, pods/attach]
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
  local t0 p suite=bookworm with_node=1
  while (($#)); do
    case $1 in
      --suite) suite=${2:-}; shift 2 || usage ;;
      --suite=*) suite=${1#--suite=}; shift ;;
      --no-node) with_node=0; shift ;;
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
      --api-port="$API_PORT" --kubelet-port="$KUBELET_PORT" --node="$NODE_NAME" ||
      die "the node did not become Ready (its logs: $DIR/node/)"
    sed 's/^/node: /' "$DIR/node-timings" >>"$DIR/timings"
    K get nodes -o wide >&2
  fi
  UP_OK=1
  cat >&2 <<EOF
  export KUBECONFIG=$PWD/$DIR/kubeconfig
  kubectl: $BIN/kubectl   (API server https://127.0.0.1:$API_PORT)
  audit log: $PWD/$DIR/audit.log
EOF
  if ((with_node)); then
    cat >&2 <<EOF
  node: $NODE_NAME ($suite guest; kubelet log $PWD/$DIR/node/share/kubelet.log)
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
  for p in "${PROCS[@]}"; do alive "$p"; done
  node_pid >/dev/null || die "no node: run up without --no-node"
  [[ $(K get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]] ||
    die "node $NODE_NAME is not Ready"
  t0=$(now)
  # dist/ from the working tree: rebuilt when any source is newer than dist/cli.js
  if [[ ! -f dist/cli.js ]] || [[ -n $(find src deploy -newer dist/cli.js -print -quit) ]]; then
    log "building dist/ (npm run build)"
    npm run --silent build >&2
  fi
  # A first apply can race the namespace's own ServiceAccount controller: it reads no
  # `default` ServiceAccount, the controller creates one, the create then fails
  # AlreadyExists. The next apply patches it.
  for ((i = 1; ; i++)); do
    K apply -f deploy/attach-rbac.yaml >/dev/null && break
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
  log "attach $NODE_NAME -n $ns ($kubectl $kver); the agent starts under TCG: minutes"
  set +e
  PATH="$(dirname "$kubectl"):$PATH" KUBECONFIG="$PWD/$DIR/kubeconfig" timeout 900 "$node_bin" dist/cli.js attach "$NODE_NAME" \
    -n "$ns" --timeout=10m --get /v1/node --get '/v1/triage?format=text' \
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
  log "attach-check passed in $(since "$t0") s: pod $pod created, port-forwarded, answered, audited, gone"
}

# down and check use the binaries `up` ran, never a new build.
recorded_bin() {
  [[ -f $DIR/bin ]] || die "no $DIR/bin: nothing was started from $DIR"
  BIN=$(cat "$DIR/bin")
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) recorded_bin && down ;;
  check) recorded_bin && check ;;
  attach-check) shift; recorded_bin && attach_check "$@" ;;
  *) usage ;;
esac
