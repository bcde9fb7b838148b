#!/usr/bin/env bash
# Workload scenarios as real Pods (test/e2e/cluster/workloads/*.yaml, kubectl apply), run
# by the dev cluster's real kubelet, and the answers of the DaemonSet's agent on that node
# (scripts/dev-cluster.sh workload-check, which sets the environment below and makes sure
# the DaemonSet is applied and Ready). Checks, as TAP:
#   - the agent's own container: the image, its pid, its namespaces (pid and net the host's,
#     ipc the sandbox's, mnt its own) and its processes
#   - the real kubelet's client and serving certificates in /v1/node, never the key
#   - OOM kill: oom-victim's dd at its 32 MiB limit; kubelet reports OOMKilled/137; /v1/oom
#     has the kernel's kill with the pod's UID and the container's ID (namespace/pod/container
#     as the API names them), the limit, dd, CONSTRAINT_MEMCG, a kmsg sequence; /v1/triage
#     an oom-kill finding whose subject names nodetruth-workloads/oom-victim/hog
#   - crash loop: crashloop's container exits 1, kubelet restarts it with its back-off;
#     /v1/triage's crash-loop finding names the pod; /v1/timeline?pod=ns/name has its
#     container created, started and exited with code 1
#   - CPU throttling: spinner's busy loop under a 0.1-core limit; /v1/throttling names the
#     container with more than half of its periods throttled; /v1/triage cpu-throttling;
#     /metrics has its throttled periods by pod_uid; its inspect names API_TOKEN, never its value
#   - zombies: PID 1 execs into sleep and never reaps its 12 children; /v1/triage
#     zombies-in-pod names the pod, from state Z in /proc/<pid>/stat
#   - memory.high: dd after dd under a 64 MiB limit, the container cgroup's memory.high set
#     to 8 MiB from the node; /v1/cgroups memory.events high growing, no OOM kill;
#     /v1/triage memory-high-reclaim
#   - hung tasks: frozen-writer's writers on a loop-mounted ext4 (hostPath) frozen with a
#     4 s kernel.hung_task_timeout_secs; /v1/triage kernel-hung-task (kmsg) and
#     processes-d-state by pod; thawed, nothing stays in D
#   - node failures made in the node by test/e2e/guest/faults.sh: a conntrack table of 100
#     filled by held connections, then an ext4 remounted read-only by its own error path, a
#     null_blk disk with bad blocks, a staging driver's taint; /v1/triage conntrack-table-full,
#     kernel-conntrack-full, kernel-fs-read-only, kernel-fs-error and kernel-io-error (kmsg
#     sequence and text), taint C in /v1/node
#   - `nodetruth attach node1 --capture -o FILE` (the real kubectl debug and port-forward),
#     then `nodetruth serve --bundle FILE` on this host answers /v1/oom with the same kill
#   - the agent as a host process on the node (test/e2e/cluster/host-check.ts, given made.json:
#     what was made above and when): the node's timeline in the order of the faults, the
#     kernel's ring, a bundle, SIGTERM
# The agent is reached as a user reaches it: `kubectl port-forward` to the pod's loopback
# listen address (127.0.0.1:7071), TLS checked against the public-key pin the agent logged,
# with the token of a ServiceAccount bound to nodetruth-reader and, for /metrics,
# nodetruth-metrics-reader (made here, deleted at the end).
#
# Environment (scripts/dev-cluster.sh workload_check):
#   KUBECONFIG                  the cluster's admin kubeconfig
#   PATH                        the release's kubectl first
#   NODETRUTH_DEV_CLUSTER_DIR   the cluster's directory (absolute): files kept in workload-check/
#   NODETRUTH_DEV_NODE          the node's name (node1)
# Run: bash scripts/dev-cluster.sh workload-check (after daemonset-check)
set -euo pipefail
cd "$(dirname "$0")/../.."
# all of it parsed before it runs (one block): the file may be edited while a run waits on the node
{

DIR=${NODETRUTH_DEV_CLUSTER_DIR:?set by scripts/dev-cluster.sh workload-check}
NODE=${NODETRUTH_DEV_NODE:-node1}
[[ -f ${KUBECONFIG:-} ]] || KUBECONFIG=$DIR/kubeconfig
export KUBECONFIG
AGENT_NS=nodetruth
AGENT_SELECTOR=app.kubernetes.io/name=nodetruth,app.kubernetes.io/component=agent
NS=nodetruth-workloads
MANIFESTS=test/e2e/cluster/workloads
WORK=$DIR/workload-check
NODE_BIN=$PWD/node_modules/.bin/node
rm -rf "$WORK"
mkdir -p "$WORK"
chmod 700 "$WORK"

CHECK_NAME=workload-check
CHECK_POLL=2
. scripts/cluster/check.sh
need_tools kubectl jq openssl curl
# the node's shell (scripts/dev-cluster.sh guest): the loop file system, memory.high, fsfreeze
node_sh() { bash scripts/dev-cluster.sh guest "$1" "${2:-60}"; }
FREEZE=/var/lib/e2e-freeze
FROZEN=0
HUNG_TASK_SECS=4
FAULTS="sh /nodetruth/test/e2e/guest/faults.sh"
FAULTS_MADE=0
CONNTRACK_MAX=100

# what was made and when (ms, this host's clock), for the agent as a host process (host-check.ts)
ms() { date +%s%3N; }
made() { # made KEY JQ-ARGS... FILTER: one record of made.json
  local key=$1
  shift
  jq -nc "$@" | jq -c --arg k "$key" '{($k): .}' >>"$WORK/made.jsonl"
}
: >"$WORK/made.jsonl"

PF_PID=
SERVE_PID=
cleanup() {
  ((FROZEN)) && node_sh "fsfreeze -u $FREEZE; cat /share/hung_task_timeout_secs.orig > /proc/sys/kernel/hung_task_timeout_secs" >/dev/null 2>&1 || true
  ((FAULTS_MADE)) && node_sh "$FAULTS conntrack-undo; $FAULTS rofs-undo; $FAULTS ioerr-undo" >/dev/null 2>&1 || true
  [[ -n $PF_PID ]] && kill "$PF_PID" 2>/dev/null || true
  [[ -n $SERVE_PID ]] && kill "$SERVE_PID" 2>/dev/null || true
  kubectl delete clusterrolebinding "$NS-reader" "$NS-metrics" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  # lazily: frozen-writer may still hold it while its namespace goes
  node_sh "umount -l $FREEZE; rm -f $FREEZE.img" >/dev/null 2>&1 || true
}
trap cleanup EXIT
t0=$(now)

# --- the agent, through a port-forward ---------------------------------------------------------
agent_pod() {
  kubectl -n "$AGENT_NS" get pods -l "$AGENT_SELECTOR" --field-selector "spec.nodeName=$NODE" -o json |
    jq -r '[.items[] | select(.metadata.deletionTimestamp == null and any(.status.conditions[]?; .type == "Ready" and .status == "True"))][0].metadata.name // empty'
}
POD=$(agent_pod) || true
[[ -n $POD ]] || die "no Ready agent pod on $NODE: run daemonset-check"
PIN=$(kubectl -n "$AGENT_NS" logs "$POD" | jq -r 'select(.tls.enabled == true) | .tls.publicKeyPin' 2>/dev/null | tail -n 1) || true
[[ -n $PIN ]] || die "the agent's log ($AGENT_NS/$POD) names no public-key pin"

# pf_start: kubectl port-forward pod/$POD :7071 in the background; sets PF_PID and LPORT
pf_start() {
  [[ -n $PF_PID ]] && kill "$PF_PID" 2>/dev/null || true
  : >"$WORK/pf.out"
  kubectl -n "$AGENT_NS" port-forward "pod/$POD" :7071 --address=127.0.0.1 >"$WORK/pf.out" 2>>"$WORK/pf.err" &
  PF_PID=$!
  wait_for 60 "the port-forward listening" grep -q '^Forwarding from 127.0.0.1:' "$WORK/pf.out" ||
    die "kubectl port-forward pod/$POD :7071: $(tail -n 5 "$WORK/pf.err")"
  LPORT=$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$WORK/pf.out" | head -n 1)
}
pf_start
openssl s_client -connect "127.0.0.1:$LPORT" </dev/null 2>/dev/null | openssl x509 >"$WORK/agent-cert.pem" 2>/dev/null || true
[[ -s $WORK/agent-cert.pem ]] || die "no certificate through the port-forward to $AGENT_NS/$POD:7071"

# a caller holding nodetruth-reader and nodetruth-metrics-reader, nothing else (in a
# namespace of its own: a previous run's may still be terminating)
wait_for 600 "namespace $NS of a previous run gone" bash -c "! kubectl get namespace $NS" ||
  die "namespace $NS is still there (terminating?)"
kubectl apply -f "$MANIFESTS/namespace.yaml" >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $NS-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: nodetruth-reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: $NS}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $NS-metrics}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: nodetruth-metrics-reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: $NS}]
YAML
wait_for 60 "ServiceAccount default in $NS" kubectl -n "$NS" get serviceaccount default
(umask 077 && echo "Authorization: Bearer $(kubectl -n "$NS" create token reader --duration=2h)" >"$WORK/token")

# agent_get PATH OUT: prints the HTTP status. No answer (the port-forward restarted), 502,
# 503 and 504 (the agent's sources later than it waits on a TCG guest) are asked again for
# up to 3 min.
agent_get() {
  local path=$1 out=$2 code i
  for ((i = 0; i < 36; i++)); do
    kill -0 "$PF_PID" 2>/dev/null || pf_start
    code=$(curl -sS -o "$out" -w '%{http_code}' --max-time 180 --cacert "$WORK/agent-cert.pem" --pinnedpubkey "$PIN" \
      -H "@$WORK/token" "https://127.0.0.1:$LPORT$path" 2>>"$WORK/curl.err") || true
    [[ $code == 000 || $code == 50[234] ]] || break
    sleep 5
  done
  echo "$code"
}
code=$(agent_get /v1/node "$WORK/node.json")
if [[ $code == 200 ]]; then
  tap OK "the agent $AGENT_NS/$POD through kubectl port-forward :7071, TLS pinned ($PIN), as $NS/reader (nodetruth-reader): /v1/node 200"
else
  tap FAIL "the agent through kubectl port-forward as $NS/reader: /v1/node $code" "$(head -c 600 "$WORK/node.json"; tail -n 3 "$WORK/curl.err")"
  die "the agent does not answer; nothing more to ask"
fi

# cid POD-JSON-FILE: the first container's ID without its runtime scheme (containerd://)
cid() { jq -r '.status.containerStatuses[0].containerID // "" | sub("^[a-z]+://"; "")' "$1"; }

# (0) the agent itself, as the real kubelet ran the DaemonSet's pod: its container runs the
# image, in the host's PID and network namespaces (hostPID, hostNetwork), the pod's IPC
# namespace and a mount namespace of its own; its processes include its main pid
kubectl -n "$AGENT_NS" get pod "$POD" -o json >"$WORK/agent-pod.json"
AGENT_CID=$(cid "$WORK/agent-pod.json")
code=$(agent_get "/v1/containers/$AGENT_CID" "$WORK/agent-inspect.json")
AGENT_PID=$(jq -r '.pid // 0' "$WORK/agent-inspect.json" 2>/dev/null) || AGENT_PID=0
if [[ $code == 200 && $AGENT_PID -gt 1 ]]; then
  tap OK "/v1/containers/${AGENT_CID:0:13} (the agent): $(jq -c '{image, pid, podName, containerName}' "$WORK/agent-inspect.json" | head -c 300)"
  expect "the agent's container runs ghcr.io/nodetruth/nodetruth:0.1.0 in pod $POD" \
    jq -e --arg p "$POD" '.image == "ghcr.io/nodetruth/nodetruth:0.1.0" and .podName == $p' "$WORK/agent-inspect.json"
  code=$(agent_get "/v1/containers/$AGENT_CID/namespaces" "$WORK/agent-ns.json")
  NSES=$(jq -c '[.items[] | {(.type): .sharedWith}] | add' "$WORK/agent-ns.json" 2>/dev/null) || true
  expect "/v1/containers/{id}/namespaces ($code): the agent's pid and net the host's, ipc the sandbox's, mnt its own: ${NSES:0:300}" \
    jq -e '.pid == "host" and .net == "host" and .ipc == "sandbox" and .mnt != "host"' <<<"${NSES:-null}"
  code=$(agent_get "/v1/containers/$AGENT_CID/processes" "$WORK/agent-processes.json")
  expect "/v1/containers/{id}/processes ($code): the agent's main pid $AGENT_PID among them" \
    jq -e --argjson p "$AGENT_PID" 'any(.items[]; .pid == $p)' "$WORK/agent-processes.json"
else
  tap FAIL "/v1/containers/$AGENT_CID (the agent's own container): $code, pid $AGENT_PID" "$(head -c 600 "$WORK/agent-inspect.json")"
fi

# (0b) the real kubelet's certificates, as the agent read them for /v1/node: the client one as
# kubelet's kubeconfig names it, the link in its cert dir (the layout kubeadm and kubelet's
# rotation keep); the serving one by its config's tlsCertFile; NotAfter as openssl reads the
# files dev-cluster.sh made
. scripts/cluster/cert.sh
cert_of() { jq -c --arg r "$1" '[.facts.certificates[]? | select(.role == $r)][0] // empty' "$WORK/node.json"; }
C=$(cert_of client)
expect "/v1/node: kubelet's client certificate, the one its kubeconfig names ($(jq -c '{target, subject, notAfter, secondsLeft, source}' <<<"${C:-{\}}" | head -c 400))" \
  jq -e --arg na "$(not_after "$DIR/pki/kubelet.crt")" --arg n "$NODE" '.present and .path == "/var/lib/kubelet/pki/kubelet-client-current.pem"
    and (.source | startswith("kubelet --kubeconfig /etc/kubernetes/kubelet.kubeconfig client-certificate (/proc/"))
    and (.target | test("^/var/lib/kubelet/pki/kubelet-client-[0-9-]+\\.pem$")) and (.subject | contains("CN=system:node:\($n)"))
    and .notAfter == $na and .secondsLeft > 0' <<<"${C:-{\}}"
C=$(cert_of serving)
expect "/v1/node: kubelet's serving certificate from its config's tlsCertFile ($(jq -c '{path, source, notAfter}' <<<"${C:-{\}}" | head -c 300))" \
  jq -e --arg na "$(not_after "$DIR/pki/kubelet-serving.crt")" '.present and .path == "/etc/kubernetes/pki/kubelet-serving.crt"
    and .source == "kubelet config tlsCertFile" and .notAfter == $na' <<<"${C:-{\}}"
expect "/v1/node never holds the client certificate's private key (the dated file holds both)" \
  bash -c '! grep -qF "$(sed -n 2p "$1")" "$2"' _ "$DIR/pki/kubelet.key" "$WORK/node.json"

# --- the workloads -----------------------------------------------------------------------------
# frozen-writer's hostPath: an ext4 of its own, mounted first
node_sh "mountpoint -q $FREEZE || $FAULTS loopfs" >"$WORK/loopfs.out" 2>&1 ||
  die "the loop file system for frozen-writer: $(cat "$WORK/loopfs.out")"
t1=$(now)
OOM_FROM=$(ms)
kubectl apply -f "$MANIFESTS/oom.yaml" -f "$MANIFESTS/crashloop.yaml" -f "$MANIFESTS/spinner.yaml" \
  -f "$MANIFESTS/zombies.yaml" -f "$MANIFESTS/memory-high.yaml" -f "$MANIFESTS/frozen-writer.yaml" >/dev/null
pod_json() { kubectl -n "$NS" get pod "$1" -o json; }

# (1) the OOM kill: kubelet's own report first
wait_for 900 "$NS/oom-victim terminated" bash -c \
  "kubectl -n $NS get pod oom-victim -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}' | grep -q ." ||
  { kubectl -n "$NS" describe pod oom-victim >&2; die "oom-victim never terminated"; }
log "oom-victim terminated $(since "$t1") s after apply"
pod_json oom-victim >"$WORK/oom-victim.json"
OOM_UID=$(jq -r .metadata.uid "$WORK/oom-victim.json")
OOM_CID=$(cid "$WORK/oom-victim.json")
made oom --arg u "$OOM_UID" --arg c "$OOM_CID" --argjson f "$OOM_FROM" --argjson t "$(ms)" '{podUid: $u, containerId: $c, from: $f, to: $t}'
expect "kubelet: oom-victim's hog terminated, exit 137, $(jq -r '.status.containerStatuses[0].state.terminated.reason' "$WORK/oom-victim.json"), QoS Burstable" \
  jq -e '.status.containerStatuses[0].state.terminated.exitCode == 137 and .status.qosClass == "Burstable"' "$WORK/oom-victim.json"
kill_of() { jq -c --arg c "$OOM_CID" '[.kills[] | select(.containerId == $c)] | last // empty' "$1"; }
# asked again until the kill is there with its names: an answer whose runtime lists missed
# their deadline on a starved node has the kill by cgroup only (pod UID, container ID)
for ((i = 0; i < 24; i++)); do
  [[ $(agent_get /v1/oom "$WORK/oom.json") == 200 ]] && [[ $(kill_of "$WORK/oom.json" | jq -r '.podName // empty') == oom-victim ]] && break
  sleep 5
done
KILL=$(kill_of "$WORK/oom.json" 2>/dev/null) || true
if [[ -n $KILL ]]; then
  tap OK "/v1/oom: the kernel's kill of container ${OOM_CID:0:13} (hog): $(jq -c '{process, pid, podNamespace, podName, containerName, qos, constraint, memcgLimitKb, cgroupDriver, taskMemcg, seq: .evidence.firstSeq}' <<<"$KILL")"
  expect "/v1/oom: attributed to $NS/oom-victim container hog (pod uid $OOM_UID), Burstable" \
    jq -e --arg u "$OOM_UID" --arg ns "$NS" '.podUid == $u and .podNamespace == $ns and .podName == "oom-victim" and .containerName == "hog" and .qos == "burstable"' <<<"$KILL"
  expect "/v1/oom: dd killed at its cgroup's 32 MiB limit (CONSTRAINT_MEMCG, not global)" \
    jq -e '.process == "dd" and .constraint == "CONSTRAINT_MEMCG" and .global == false and .memcgLimitKb == 32768' <<<"$KILL"
  expect "/v1/oom: read from /dev/kmsg with a sequence number, systemd cgroup path" \
    jq -e '.evidence.source == "kmsg" and (.evidence.firstSeq | type == "number") and .cgroupDriver == "systemd"' <<<"$KILL"
  # kubelet sets memory.oom.group=1 on every container: the kernel then reports the kill of
  # each task of the group again ("Tasks in <cgroup> are going to be killed due to
  # memory.oom.group set", "Killed process" once more): still one kill of this pid
  same=$(jq --argjson p "$(jq .pid <<<"$KILL")" --argjson s "$(jq .evidence.firstSeq <<<"$KILL")" '[.kills[] | select(.pid == $p and .evidence.firstSeq == $s)] | length' "$WORK/oom.json")
  expect "/v1/oom: the kill reported once under memory.oom.group ($same of pid $(jq .pid <<<"$KILL") from one report)" test "$same" = 1
else
  tap FAIL "/v1/oom: the kernel's kill of container $OOM_CID" "$(head -c 1500 "$WORK/oom.json")"
fi

# the same kill as the kernel logged it: /v1/kernel's record names the container's cgroup
code=$(agent_get '/v1/kernel?pattern=oom-kill' "$WORK/kernel-oom.json")
expect "/v1/kernel?pattern=oom-kill ($code): a record naming ${OOM_CID:0:13}'s cgroup, with a kmsg sequence number ($(jq -c --arg c "$OOM_CID" '[.records[]? | select(.text | contains($c)) | {seq, text: .text[0:120]}][0]' "$WORK/kernel-oom.json" 2>/dev/null | head -c 300))" \
  jq -e --arg c "$OOM_CID" '[.records[] | select(.text | contains($c))] | length > 0 and (.[0].seq | type == "number")' "$WORK/kernel-oom.json"
# kubelet removes the cgroup of a pod whose containers have all ended (restartPolicy Never):
# what the pod's cgroup still says of the kill is recorded, not asserted
code=$(agent_get /v1/cgroups "$WORK/cgroups-oom.json")
log "/v1/cgroups ($code): oom-victim's pod cgroup: $(jq -c --arg u "$OOM_UID" '[.items[]? | select(.kind == "pod" and .podUid == $u) | {qos, events: .memory.events}][0]' "$WORK/cgroups-oom.json" 2>/dev/null | head -c 300)"

# (3) throttling: the spinner at its 0.1-core limit
wait_for 600 "$NS/spinner Running" bash -c \
  "kubectl -n $NS get pod spinner -o jsonpath='{.status.phase}' | grep -qx Running" ||
  { kubectl -n "$NS" describe pod spinner >&2; die "spinner never ran"; }
pod_json spinner >"$WORK/spinner.json"
SPIN_UID=$(jq -r .metadata.uid "$WORK/spinner.json")
SPIN_CID=$(cid "$WORK/spinner.json")
made spinner --arg u "$SPIN_UID" --arg c "$SPIN_CID" '{podUid: $u, containerId: $c}'
sleep 5
code=$(agent_get '/v1/throttling?window=5s' "$WORK/throttling.json")
SPIN=$(jq -c --arg c "$SPIN_CID" '.items | to_entries[] | select(.value.containerId == $c) | .value + {rank: (.key + 1)}' "$WORK/throttling.json" 2>/dev/null) || true
if [[ $code == 200 && -n $SPIN ]]; then
  tap OK "/v1/throttling (5 s): spinner/spin: $(jq -c '{rank, podNamespace, podName, containerName, throttledShare, periods, throttledPeriods, usageCores, quota: .cpuMax.quotaCores}' <<<"$SPIN")"
  expect "/v1/throttling: names $NS/spinner container spin (pod uid $SPIN_UID), quota 0.1 core" \
    jq -e --arg u "$SPIN_UID" --arg ns "$NS" '.podUid == $u and .podNamespace == $ns and .podName == "spinner" and .containerName == "spin" and .cpuMax.quotaCores == 0.1' <<<"$SPIN"
  expect "/v1/throttling: more than half of its periods throttled" jq -e '.throttledShare > 0.5' <<<"$SPIN"
else
  tap FAIL "/v1/throttling names spinner's container $SPIN_CID ($code)" "$(head -c 1500 "$WORK/throttling.json")"
fi

# (3b) the spinner through /metrics (cAdvisor's names and labels, pod_uid) and its inspect,
# which names its environment variable but never the value
# A scrape whose runtime or cgroups source missed its deadline (nodetruth_scrape_source_up 0,
# seen on a starved TCG guest) is a 200 without the containers' series: asked again, 10 s
# apart, for up to 3 min
for ((i = 0; i < 18; i++)); do
  code=$(agent_get /metrics "$WORK/metrics.txt")
  [[ $code == 200 ]] && grep -qx 'nodetruth_scrape_source_up{source="runtime"} 1' "$WORK/metrics.txt" &&
    grep -qx 'nodetruth_scrape_source_up{source="cgroups"} 1' "$WORK/metrics.txt" && break
  sleep 10
done
SERIES=$(grep -E "^container_cpu_cfs_throttled_periods_total\{[^}]*pod_uid=\"$SPIN_UID\"" "$WORK/metrics.txt" | grep -F 'container="spin"' | head -n 1) || true
if [[ $code == 200 && -n $SERIES ]]; then
  tap OK "/metrics: ${SERIES:0:400}"
  expect "/metrics: the spinner's throttled periods labelled namespace and pod as cAdvisor labels them, above 0" \
    bash -c '[[ $1 == *"namespace=\"$2\""* && $1 == *"pod=\"spinner\""* ]] && awk "{ exit !(\$NF > 0) }" <<<"$1"' _ "$SERIES" "$NS"
  expect "/metrics: nodetruth_runtime_ready 1" grep -qE '^nodetruth_runtime_ready(\{[^}]*\})? 1$' "$WORK/metrics.txt"
else
  tap FAIL "/metrics: container_cpu_cfs_throttled_periods_total for pod_uid $SPIN_UID ($code)" "$(grep -E '^(container_cpu_cfs_throttled_periods_total|nodetruth_scrape_source_up)' "$WORK/metrics.txt" | head -n 12)"
fi
# the image by the name the Pod gave, on a runtime that lists it by ID (containerd 1.6) too
code=$(agent_get /v1/containers "$WORK/containers.json")
expect "/v1/containers ($code): the spinner's image named as the Pod names it ($(jq -r --arg c "$SPIN_CID" '.items[] | select(.id == $c) | .image' "$WORK/containers.json" 2>/dev/null | head -c 100))" \
  jq -e --arg c "$SPIN_CID" 'any(.items[]; .id == $c and .image == "localhost/e2e/busybox:1")' "$WORK/containers.json"
code=$(agent_get "/v1/containers/$SPIN_CID" "$WORK/spinner-inspect.json")
if [[ $code == 200 ]]; then
  tap OK "/v1/containers/${SPIN_CID:0:13}: $(jq -c '{pid, podUid, podName, containerName, state}' "$WORK/spinner-inspect.json" | head -c 300)"
  expect "/v1/containers/{id}: the spinner's main pid and pod UID" jq -e --arg u "$SPIN_UID" '.pid > 1 and .podUid == $u' "$WORK/spinner-inspect.json"
  expect "/v1/containers/{id}: API_TOKEN named, its value never shown" \
    bash -c 'grep -q API_TOKEN "$1" && ! grep -q e2e-secret-value-do-not-show "$1"' _ "$WORK/spinner-inspect.json"
else
  tap FAIL "/v1/containers/$SPIN_CID ($code)" "$(head -c 600 "$WORK/spinner-inspect.json")"
fi

running() { # running POD: Running within 10 min (a TCG node makes sandboxes slowly), its JSON in $WORK
  wait_for 600 "$NS/$1 Running" bash -c "kubectl -n $NS get pod $1 -o jsonpath='{.status.phase}' | grep -qx Running" ||
    { kubectl -n "$NS" describe pod "$1" >&2; return 1; }
  pod_json "$1" >"$WORK/$1.json"
}
# triage_until ID POD-UID [TRIES]: /v1/triage again (10 s apart) until it has that finding about that pod; prints it
triage_until() {
  local i f
  for ((i = 0; i < ${3:-18}; i++)); do
    if [[ $(agent_get /v1/triage "$WORK/triage-$1.json") == 200 ]]; then
      f=$(jq -c --arg id "$1" --arg u "$2" '[.findings[] | select(.id == $id and .subject.podUid == $u)][0] // empty' "$WORK/triage-$1.json")
      [[ -n $f ]] && { echo "$f"; return 0; }
    fi
    sleep 10
  done
  return 1
}
triage_ids_of() { jq -c '[.findings[]? | {id, pod: .subject.pod}]' "$WORK/triage-$1.json" 2>/dev/null | head -c 1200; }

# (4) zombies: the 12 `sleep 1` children of the container's PID 1, never reaped
if running zombies; then
  ZOMBIE_UID=$(jq -r .metadata.uid "$WORK/zombies.json")
  if F=$(triage_until zombies-in-pod "$ZOMBIE_UID"); then
    tap OK "/v1/triage zombies-in-pod: $(jq -r .title <<<"$F")"
    expect "/v1/triage zombies-in-pod: $NS/zombies container parent holds 12 zombie processes (${ZOMBIE_UID})" \
      jq -e --arg ns "$NS" --arg c "$(cid "$WORK/zombies.json")" '.title == "\($ns)/zombies container parent holds 12 zombie processes" and .subject.containerId == $c' <<<"$F"
    expect "/v1/triage zombies-in-pod: each piece of evidence a process in state Z in that container's cgroup ($(jq -c '[.evidence[] | select(.source == "proc") | .excerpt][0]' <<<"$F" | head -c 200))" \
      jq -e --arg c "$(cid "$WORK/zombies.json")" '[.evidence[] | select(.source == "proc")] | length > 0 and all(.[]; .excerpt | test("^\\d+ \\((sleep|sh)\\) Z ppid \\d+; cgroup \\S*" + $c))' <<<"$F"
  else
    tap FAIL "/v1/triage: a zombies-in-pod finding for $NS/zombies" "$(triage_ids_of zombies-in-pod)"
  fi
else
  tap FAIL "$NS/zombies Running"
fi

# (5) memory.high: set from the node on the hog's own cgroup, which kubelet made
if running memory-high; then
  HIGH_UID=$(jq -r .metadata.uid "$WORK/memory-high.json")
  HIGH_CID=$(cid "$WORK/memory-high.json")
  node_sh "f=\$(find /sys/fs/cgroup/kubepods.slice -maxdepth 4 -type d -name 'cri-containerd-$HIGH_CID.scope' | head -n 1); [ -n \"\$f\" ] && echo 8388608 > \"\$f/memory.high\" && echo \"\$f\"" >"$WORK/memory-high.out" 2>&1 ||
    log "memory.high not set: $(cat "$WORK/memory-high.out")"
  row() { jq -c --arg c "$HIGH_CID" '[.items[] | select(.containerId == $c)][0] // empty' "$WORK/cgroups.json"; }
  first=
  for ((i = 0; i < 30; i++)); do
    if [[ $(agent_get /v1/cgroups "$WORK/cgroups.json") == 200 ]] && R=$(row) && [[ -n $R ]]; then
      h=$(jq '.memory.events.high // 0' <<<"$R")
      if [[ -z $first ]]; then
        ((h > 0)) && { first=$R; FIRST_HIGH=$h; }
      elif ((h > FIRST_HIGH)); then
        break
      fi
    fi
    sleep 2
  done
  if [[ -n $first ]]; then
    tap OK "/v1/cgroups memory-high/hog: $(jq -c '{podUid, memory: {max: .memory.max, high: .memory.high, current: .memory.current, events: .memory.events}}' <<<"$first" | head -c 400)"
    expect "/v1/cgroups: the hog's row in pod $HIGH_UID, memory.max 64 MiB, memory.high 8 MiB, no OOM kill" \
      jq -e --arg u "$HIGH_UID" '.podUid == $u and .memory.max == 67108864 and .memory.high == 8388608 and (.memory.events.oomKill // 0) == 0' <<<"$first"
    expect "/v1/cgroups: memory.events high grows while the hog runs ($FIRST_HIGH -> $(jq '.memory.events.high' <<<"$R"))" \
      jq -e --argjson f "$FIRST_HIGH" '.memory.events.high > $f' <<<"$R"
  else
    tap FAIL "/v1/cgroups: memory.events high > 0 for memory-high/hog ($HIGH_CID)" "$(cat "$WORK/memory-high.out"; row | head -c 600)"
  fi
  if F=$(triage_until memory-high-reclaim "$HIGH_UID"); then
    expect "/v1/triage memory-high-reclaim: $(jq -r .title <<<"$F")" \
      jq -e --arg ns "$NS" --arg c "$HIGH_CID" '.title == "\($ns)/memory-high container hog is throttled at memory.high (8MiB)" and .subject.containerId == $c and .evidence[0].excerpt == "8388608"' <<<"$F"
  else
    tap FAIL "/v1/triage: a memory-high-reclaim finding for $NS/memory-high" "$(triage_ids_of memory-high-reclaim)"
  fi
else
  tap FAIL "$NS/memory-high Running"
fi

# (6) hung tasks: the writers' file system frozen under a 4 s hung-task timeout
if running frozen-writer; then
  WRITER_UID=$(jq -r .metadata.uid "$WORK/frozen-writer.json")
  WRITER_CID=$(cid "$WORK/frozen-writer.json")
  HUNG_FROM=$(ms)
  FROZEN=1
  node_sh "cat /proc/sys/kernel/hung_task_timeout_secs > /share/hung_task_timeout_secs.orig; echo 10 > /proc/sys/kernel/hung_task_warnings;
    echo $HUNG_TASK_SECS > /proc/sys/kernel/hung_task_timeout_secs; fsfreeze -f $FREEZE" >/dev/null
  for ((i = 0; i < 45; i++)); do
    [[ $(agent_get '/v1/kernel?pattern=blocked%20for%20more%20than' "$WORK/kernel-hung.json") == 200 ]] &&
      jq -e '.records | length > 0' "$WORK/kernel-hung.json" >/dev/null && break
    sleep 2
  done
  if F=$(triage_until kernel-hung-task "$WRITER_UID"); then
    expect "/v1/triage kernel-hung-task: $(jq -r .title <<<"$F")" \
      jq -e --arg ns "$NS" --arg c "$WRITER_CID" '.title == "A task was blocked in the kernel (hung task) in \($ns)/frozen-writer container writer" and .subject.containerId == $c' <<<"$F"
    expect "/v1/triage kernel-hung-task: kmsg evidence with a sequence number, the writer's cgroup, blocked >= ${HUNG_TASK_SECS} s ($(jq -c '[.evidence[] | select(.source == "kmsg") | .seq]' <<<"$F"))" \
      jq -e --arg c "$WRITER_CID" --argjson s "$HUNG_TASK_SECS" '[.evidence[] | select(.source == "kmsg")] | length > 0 and all(.[]; (.seq | type == "number")
        and (.excerpt | contains("cri-containerd-\($c).scope")) and ((.excerpt | capture("blocked for more than (?<n>\\d+) seconds").n | tonumber) >= $s))' <<<"$F"
    # the D-state count is node facts, a source of its own: asked again while it is late
    for ((i = 0; i < 12; i++)); do
      D=$(jq -c '[.findings[] | select(.id == "processes-d-state")][0] // empty' "$WORK/triage-kernel-hung-task.json" 2>/dev/null)
      [[ -n $D ]] && break
      sleep 5
      agent_get /v1/triage "$WORK/triage-kernel-hung-task.json" >/dev/null
    done
    expect "/v1/triage processes-d-state: the 4 writers by pod ($(jq -r .detail <<<"${D:-{\}}" | head -c 200))" \
      jq -e --arg ns "$NS" '.detail | test("\($ns)/frozen-writer container writer: 4\\b")' <<<"${D:-{\}}"
  else
    tap FAIL "/v1/triage: a kernel-hung-task finding for $NS/frozen-writer" "$(triage_ids_of kernel-hung-task; head -c 600 "$WORK/kernel-hung.json")"
  fi
  node_sh "fsfreeze -u $FREEZE; cat /share/hung_task_timeout_secs.orig > /proc/sys/kernel/hung_task_timeout_secs" >/dev/null
  FROZEN=0
  made hung --arg u "$WRITER_UID" --arg c "$WRITER_CID" --argjson f "$HUNG_FROM" --argjson t "$(ms)" '{podUid: $u, containerId: $c, from: $f, to: $t}'
  thawed=0
  for ((i = 0; i < 12; i++)); do
    if [[ $(agent_get /v1/node "$WORK/node-after-thaw.json") == 200 ]] &&
      ! jq -e --arg u "$WRITER_UID" 'any(.facts.processes.byPod[]?; .podUid == $u and .state == "D")' "$WORK/node-after-thaw.json" >/dev/null; then
      thawed=1
      break
    fi
    sleep 5
  done
  expect "thawed: no writer of frozen-writer in D state within a minute (/v1/node facts)" test "$thawed" = 1
else
  tap FAIL "$NS/frozen-writer Running"
fi

# (7) node failures, made for real in the node (test/e2e/guest/faults.sh)
# node_finding ID [DEVICE]: the node-wide finding of that id (about DEVICE: its title ends "on DEVICE")
node_finding() {
  jq -c --arg id "$1" --arg d "${2:-}" '[.findings[]? | select(.id == $id and ($d == "" or (.title | endswith(" on " + $d))))][0] // empty' "$WORK/triage-node.json" 2>/dev/null
}
# triage_node_until "ID [DEVICE]"...: /v1/triage again (5 s apart, up to 3 min) until it has each
triage_node_until() {
  local i p ok
  for ((i = 0; i < 36; i++)); do
    if [[ $(agent_get /v1/triage "$WORK/triage-node.json") == 200 ]]; then
      ok=1
      # shellcheck disable=SC2086 # "ID DEVICE" split into node_finding's two arguments
      for p in "$@"; do [[ -n $(node_finding $p) ]] || ok=0; done
      ((ok)) && return 0
    fi
    sleep 5
  done
  return 1
}
# triage_node_critical ID: /v1/triage again (5 s apart, up to 3 min) until that node finding is critical
triage_node_critical() {
  local i
  for ((i = 0; i < 36; i++)); do
    [[ $(node_finding "$1" | jq -r '.severity // empty' 2>/dev/null) == critical ]] && return 0
    sleep 5
    agent_get /v1/triage "$WORK/triage-node.json" >/dev/null || true
  done
  return 1
}
# kmsg_evidence TEXT: jq's test that a finding has kmsg evidence with a sequence number, one containing TEXT
kmsg_evidence() { jq -e --arg t "$1" 'any(.evidence[]; .source == "kmsg" and (.seq | type == "number") and (.excerpt | contains($t)))'; }
FAULTS_MADE=1
# the conntrack table: only the filler's connections are tracked, so the port-forward's streams still connect
CT_FROM=$(ms)
CT_OK=0
if node_sh "$FAULTS conntrack-fill $CONNTRACK_MAX" 180 >"$WORK/conntrack.out" 2>&1; then
  fill=$(grep -m1 '^{' "$WORK/conntrack.out") || fill='{}'
  CT_OK=1
  # how many it held depends on what else the node's table holds (measured: sid 100 of 100, bookworm 50)
  expect "the filler held connections until SYNs were dropped ($fill)" \
    jq -e '.connected >= 1 and .dropped >= 1' <<<"$fill"
  triage_node_until conntrack-table-full kernel-conntrack-full ||
    log "not both conntrack findings within 3 min: $(jq -c '[.findings[]? | .id]' "$WORK/triage-node.json" 2>/dev/null | head -c 600)"
  # the node's own entries come and go beside the filler's, which takes a freed slot each second:
  # a triage made while one is free sees the table under 98 % (a warning), so ask until it is full
  triage_node_critical conntrack-table-full || log "conntrack-table-full not critical within 3 min"
  F=$(node_finding conntrack-table-full)
  expect "/v1/triage conntrack-table-full, critical: nf_conntrack_count against nf_conntrack_max $CONNTRACK_MAX ($(jq -c '[.evidence[]? | {(.path): .excerpt}] | add' <<<"${F:-{\}}" | head -c 300))" \
    jq -e --arg m "$CONNTRACK_MAX" '.severity == "critical" and ([.evidence[] | {(.path): .excerpt}] | add) as $e
      | $e["/proc/sys/net/netfilter/nf_conntrack_max"] == $m and ($e["/proc/sys/net/netfilter/nf_conntrack_count"] | tonumber) >= ($m | tonumber) * 0.98' <<<"${F:-{\}}"
  F=$(node_finding kernel-conntrack-full)
  expect "/v1/triage kernel-conntrack-full, critical, from the kernel's line ($(jq -c '[.evidence[]? | select(.source == "kmsg") | .excerpt][0]' <<<"${F:-{\}}" | head -c 300))" \
    jq -e '.severity == "critical" and any(.evidence[]; .source == "kmsg" and (.seq | type == "number") and (.excerpt | test("nf_conntrack: table full")))' <<<"${F:-{\}}"
else
  tap FAIL "the conntrack table filled (faults.sh conntrack-fill $CONNTRACK_MAX)" "$(tail -n 8 "$WORK/conntrack.out")"
fi
node_sh "$FAULTS conntrack-undo" >/dev/null 2>&1 || log "the conntrack table not undone"
((CT_OK)) && made conntrack --argjson f "$CT_FROM" --argjson t "$(ms)" '{from: $f, to: $t}'
# the file system's and the disk's errors last: the kernel capture (host-check.ts) keeps their records apart
LOOP= NULLB=
FS_FROM=$(ms)
if node_sh "$FAULTS rofs" 120 >"$WORK/rofs.out" 2>&1 && LOOP=$(node_sh "cat /share/rofs-dev.txt") &&
  node_sh "$FAULTS ioerr" 120 >"$WORK/ioerr.out" 2>&1 && NULLB=$(node_sh "cat /share/ioerr-dev.txt") &&
  node_sh "$FAULTS staging-taint" 120 >"$WORK/taint.out" 2>&1; then
  tap OK "the node broken: $LOOP read-only after its error ($(grep -m1 '^write after the error' "$WORK/rofs.out")), $NULLB's bad blocks ($(grep -m1 '^reads of' "$WORK/ioerr.out")), $(grep -m1 '^tainted after' "$WORK/taint.out")"
  triage_node_until "kernel-fs-read-only $LOOP" "kernel-fs-error $LOOP" "kernel-io-error $NULLB" ||
    log "not every fs/disk finding within 3 min: $(jq -c '[.findings[]? | .id]' "$WORK/triage-node.json" 2>/dev/null | head -c 600)"
  F=$(node_finding kernel-fs-read-only "$LOOP")
  expect "/v1/triage kernel-fs-read-only on $LOOP, critical, from the kernel's line ($(jq -c '[.evidence[]? | select(.source == "kmsg") | {seq, excerpt}][0]' <<<"${F:-{\}}" | head -c 300))" \
    kmsg_evidence "EXT4-fs ($LOOP): Remounting filesystem read-only" <<<"${F:-{\}}"
  expect "/v1/triage kernel-fs-read-only: $(jq -r .title <<<"${F:-{\}}")" \
    jq -e --arg d "$LOOP" '.severity == "critical" and .title == "A filesystem was remounted read-only or shut down after errors on \($d)"' <<<"${F:-{\}}"
  F=$(node_finding kernel-fs-error "$LOOP")
  expect "/v1/triage kernel-fs-error on $LOOP, warning, from the kernel's line ($(jq -c '[.evidence[]? | select(.source == "kmsg") | .excerpt][0]' <<<"${F:-{\}}" | head -c 300))" \
    jq -e --arg d "$LOOP" '.severity == "warning" and any(.evidence[]; .source == "kmsg" and (.seq | type == "number")
      and (.excerpt | contains("EXT4-fs error (device \($d)): trigger_test_error:") and contains("e2e: error made by the harness")))' <<<"${F:-{\}}"
  F=$(node_finding kernel-io-error "$NULLB")
  expect "/v1/triage kernel-io-error on $NULLB, warning, from the block layer's line ($(jq -c '[.evidence[]? | select(.source == "kmsg") | .excerpt][0]' <<<"${F:-{\}}" | head -c 300))" \
    jq -e --arg d "$NULLB" '.severity == "warning" and any(.evidence[]; .source == "kmsg" and (.seq | type == "number")
      and (.excerpt | test("I/O error, dev \($d), sector \\d+ op 0x0:\\(READ\\)") or contains("Buffer I/O error on dev \($d), ")))' <<<"${F:-{\}}"
  [[ $(agent_get /v1/node "$WORK/node-taint.json") == 200 ]] || true
  expect "/v1/node facts.taint has C, a staging driver ($(jq -c '.facts.taint' "$WORK/node-taint.json" 2>/dev/null))" \
    jq -e '.facts.taint.value as $v | ($v / 1024 | floor) % 2 == 1 and (.facts.taint.letters | contains("C"))' "$WORK/node-taint.json"
  expect "/v1/triage: no kernel-tainted finding says C (a staging driver is no trouble)" \
    jq -e '[.findings[] | select(.id == "kernel-tainted" and (.title | test("C")))] | length == 0' "$WORK/triage-node.json"
else
  tap FAIL "the node's fs and disk failures made (faults.sh rofs, ioerr, staging-taint)" "$(tail -n 5 "$WORK/rofs.out" "$WORK/ioerr.out" "$WORK/taint.out" 2>/dev/null)"
fi
node_sh "$FAULTS rofs-undo; $FAULTS ioerr-undo" >/dev/null 2>&1 || log "the fs and disk failures not undone"
[[ -n $LOOP && -n $NULLB ]] && made fsErrors --arg l "$LOOP" --arg n "$NULLB" --argjson f "$FS_FROM" --argjson t "$(ms)" '{loop: $l, nullb: $n, from: $f, to: $t}'
FAULTS_MADE=0

# (2) the crash loop: kubelet's back-off (10 s, 20 s, 40 s) to a fourth run (attempt 3)
wait_for 900 "$NS/crashloop restarted 3 times" bash -c \
  "[[ \$(kubectl -n $NS get pod crashloop -o jsonpath='{.status.containerStatuses[0].restartCount}') -ge 3 ]]" ||
  { kubectl -n "$NS" describe pod crashloop >&2; die "crashloop never reached 3 restarts"; }
log "crashloop restarted 3 times $(since "$t1") s after apply"
pod_json crashloop >"$WORK/crashloop.json"
CRASH_UID=$(jq -r .metadata.uid "$WORK/crashloop.json")
made crashloop --arg u "$CRASH_UID" '{podUid: $u}'
expect "kubelet: crashloop's last run exited 1 ($(jq -c '.status.containerStatuses[0] | {restartCount, state: (.state | keys[0]), reason: (.state.waiting.reason // .state.terminated.reason // null), last: .lastState.terminated.exitCode}' "$WORK/crashloop.json"))" \
  jq -e '.status.containerStatuses[0].lastState.terminated.exitCode == 1 or .status.containerStatuses[0].state.terminated.exitCode == 1' "$WORK/crashloop.json"

# /v1/triage: the three findings in one snapshot (the throttling measured over 2 s)
finding() { # finding ID POD-UID: the finding of that id about that pod (its subject's names asserted apart)
  jq -c --arg id "$1" --arg u "$2" '[.findings[] | select(.id == $id and .subject.podUid == $u)][0] // empty' "$WORK/triage.json"
}
for ((i = 0; i < 30; i++)); do
  if [[ $(agent_get '/v1/triage?window=2s' "$WORK/triage.json") == 200 ]] &&
    [[ -n $(finding oom-kill "$OOM_UID") && -n $(finding crash-loop "$CRASH_UID") && -n $(finding cpu-throttling "$SPIN_UID") ]]; then
    break
  fi
  sleep 10
done
triage_ids=$(jq -c '[.findings[] | {id, pod: .subject.pod}]' "$WORK/triage.json" 2>/dev/null | head -c 1500)
F=$(finding oom-kill "$OOM_UID") || true
if [[ -n $F ]]; then
  tap OK "/v1/triage oom-kill: $(jq -r .title <<<"$F")"
  expect "/v1/triage oom-kill: subject $NS/oom-victim container hog, its pod UID and container ID" \
    jq -e --arg ns "$NS" --arg c "$OOM_CID" '.subject.namespace == $ns and .subject.pod == "oom-victim" and .subject.container == "hog" and .subject.containerId == $c' <<<"$F"
else
  tap FAIL "/v1/triage: an oom-kill finding for $NS/oom-victim" "$triage_ids"
fi
F=$(finding crash-loop "$CRASH_UID") || true
if [[ -n $F ]]; then
  tap OK "/v1/triage crash-loop: $(jq -r '.title + ": " + .detail' <<<"$F" | head -c 300)"
  expect "/v1/triage crash-loop: subject $NS/crashloop container crash (pod UID $CRASH_UID)" \
    jq -e --arg ns "$NS" '.subject.namespace == $ns and .subject.pod == "crashloop" and .subject.container == "crash"' <<<"$F"
else
  tap FAIL "/v1/triage: a crash-loop finding for $NS/crashloop" "$triage_ids"
fi
F=$(finding cpu-throttling "$SPIN_UID") || true
if [[ -n $F ]]; then
  tap OK "/v1/triage cpu-throttling: $(jq -r .title <<<"$F")"
  expect "/v1/triage cpu-throttling: subject $NS/spinner container spin" \
    jq -e --arg ns "$NS" --arg c "$SPIN_CID" '.subject.namespace == $ns and .subject.pod == "spinner" and .subject.container == "spin" and .subject.containerId == $c' <<<"$F"
else
  tap FAIL "/v1/triage: a cpu-throttling finding for $NS/spinner" "$triage_ids"
fi

# /v1/timeline of the crash loop: each attempt the runtime still holds, created, started, exited 1
# (the runtime and the API server's Events only; asked again while the runtime misses its deadline)
for ((i = 0; i < 20; i++)); do
  code=$(agent_get "/v1/timeline?pod=$NS/crashloop&since=30m&source=runtime&source=kube" "$WORK/timeline.json")
  [[ $code == 200 ]] && jq -e '.sources.runtime.ok == true and .sources.kube.ok == true' "$WORK/timeline.json" >/dev/null && break
  sleep 10
done
if [[ $code == 200 ]]; then
  tap OK "/v1/timeline?pod=$NS/crashloop: $(jq -c '[.events[] | .kind] | group_by(.) | map({(.[0]): length}) | add' "$WORK/timeline.json")"
  ev() { jq -c --arg k "$1" --arg u "$CRASH_UID" '[.events[] | select(.kind == $k and .pod.uid == $u and .container.name == "crash")]' "$WORK/timeline.json"; }
  expect "timeline: container-created of crash ($(ev container-created | jq -c 'map(.container.attempt)'))" jq -e 'length > 0' <<<"$(ev container-created)"
  expect "timeline: container-started of crash ($(ev container-started | jq -c 'map(.container.attempt)'))" jq -e 'length > 0' <<<"$(ev container-started)"
  expect "timeline: container-exited with code 1 ($(ev container-exited | jq -c 'map(.summary)' | head -c 300))" \
    jq -e 'length > 0 and all(.[]; .summary | test("exited with code 1"))' <<<"$(ev container-exited)"
  expect "timeline: for one attempt, created <= started <= exited" jq -e --arg u "$CRASH_UID" '
    [.events[] | select(.pod.uid == $u and .container.name == "crash")] | group_by(.container.attempt)
    | any(.[]; (map(.kind) | index("container-created")) as $c | (map(.kind) | index("container-started")) as $s
      | (map(.kind) | index("container-exited")) as $e | $c != null and $s != null and $e != null and $c < $s and $s <= $e)' "$WORK/timeline.json"
  expect "timeline: kubelet's BackOff Event of the pod, from the API server ($(jq -c '[.events[] | select(.source == "kube" and .kind == "event-back-off") | .summary][0]' "$WORK/timeline.json" | head -c 200))" \
    jq -e 'any(.events[]; .source == "kube" and .kind == "event-back-off")' "$WORK/timeline.json"
  expect "timeline: only $NS/crashloop's events" jq -e --arg u "$CRASH_UID" 'all(.events[]; .pod == null or .pod.uid == $u or .pod.uid == null)' "$WORK/timeline.json"
else
  tap FAIL "/v1/timeline?pod=$NS/crashloop: $code" "$(head -c 800 "$WORK/timeline.json")"
fi

# /v1/pods: the spinner's sandbox as the API server names its pod
code=$(agent_get "/v1/pods?namespace=$NS" "$WORK/pods.json")
expect "/v1/pods?namespace=$NS ($code): spinner's sandbox with its name, namespace, UID, SANDBOX_READY ($(jq -c --arg u "$SPIN_UID" '[.items[]? | select(.uid == $u) | {name, namespace, state, attempt}][0]' "$WORK/pods.json" 2>/dev/null | head -c 200))" \
  jq -e --arg u "$SPIN_UID" --arg ns "$NS" 'any(.items[]; .uid == $u and .name == "spinner" and .namespace == $ns and .state == "SANDBOX_READY") and all(.items[]; .namespace == $ns)' "$WORK/pods.json"

# /v1/containers/{id}/logs: the newest exited attempt of the crash loop, from its CRI log file
# (both streams). kubelet keeps one exited container per container name: the pod is read
# again just before, and once more if a new attempt ended in between (404).
for ((i = 0; i < 3; i++)); do
  CRASH_CID=$(pod_json crashloop | jq -r '.status.containerStatuses[0] | (.state.terminated.containerID // .lastState.terminated.containerID // "") | sub("^[a-z]+://"; "")')
  code=$(agent_get "/v1/containers/$CRASH_CID/logs" "$WORK/crash-logs.json")
  [[ $code == 404 ]] || break
done
expect "/v1/containers/${CRASH_CID:0:13}/logs ($code): the attempt's stdout and stderr lines ($(jq -c '{file, entries: [.entries[]? | {stream, message}]}' "$WORK/crash-logs.json" 2>/dev/null | head -c 400))" \
  jq -e --arg c "$CRASH_CID" '.containerId == $c and (.file | endswith(".log"))
    and any(.entries[]; .stream == "stdout" and (.message | startswith("starting attempt at ")))
    and any(.entries[]; .stream == "stderr" and .message == "fatal: missing config")' "$WORK/crash-logs.json"

# /v1/logs?query=containerd: the node's journal as the image's journalctl reads it
code=$(agent_get '/v1/logs?query=containerd&tailLines=50' "$WORK/journal-containerd.json")
expect "/v1/logs?query=containerd ($code): $(jq '.records | length' "$WORK/journal-containerd.json" 2>/dev/null) journal records, each of containerd.service with a journald cursor ($(jq -c '.records[-1]? | {unit, identifier, message: .message[0:80]}' "$WORK/journal-containerd.json" 2>/dev/null | head -c 200))" \
  jq -e '.source == "journal" and (.records | length > 0) and all(.records[]; .unit == "containerd.service" and (.cursor | startswith("s=")))' "$WORK/journal-containerd.json"

# what kubelet itself said of the three pods (its Events), for the record
kubectl -n "$NS" get events --sort-by=.firstTimestamp \
  -o custom-columns=FIRST:.firstTimestamp,LAST:.lastTimestamp,COUNT:.count,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message >"$WORK/events.txt" 2>&1 || true
grep -E 'BackOff|OOM|Killing|Started' "$WORK/events.txt" | head -n 12 | sed 's/^/  # /'

# --- (4) attach --capture from the real cluster, the bundle served on this host ---------------
if [[ ! -f dist/cli.js ]] || [[ -n $(find src deploy -newer dist/cli.js -print -quit) ]]; then
  log "building dist/ (npm run build)"
  # tsc writes dist/ even when it reports type errors (no noEmitOnError): the launcher's
  # own errors would show in the run; say so and go on
  npm run --silent build >&2 || log "npm run build reported errors; dist/ as it wrote it"
fi
for ((i = 1; ; i++)); do
  kubectl apply -f deploy/attach-rbac.yaml >/dev/null && break
  ((i < 3)) || die "kubectl apply -f deploy/attach-rbac.yaml failed $i times"
  sleep 1
done
BUNDLE=$WORK/capture.tar.gz
t2=$(now)
set +e
timeout 1200 "$NODE_BIN" dist/cli.js attach "$NODE" -n nodetruth-attach --timeout=10m --capture -o "$BUNDLE" \
  >"$WORK/attach.out" 2>"$WORK/attach.err"
rc=$?
set -e
sed 's/^/  # attach: /' "$WORK/attach.err" | tail -n 8
if [[ $rc == 0 && -s $BUNDLE ]]; then
  tap OK "attach $NODE --capture -o FILE: exit 0 in $(since "$t2") s, $(stat -c %s "$BUNDLE") bytes"
else
  tap FAIL "attach $NODE --capture -o FILE: exit $rc" "$(tail -n 10 "$WORK/attach.err")"
fi
if [[ -s $BUNDLE ]]; then
  # the route answers the capture took through the agent's own app, with their status
  tar xzf "$BUNDLE" -O manifest.json >"$WORK/bundle-manifest.json" 2>/dev/null || true
  routes=$(jq -c '[.sections[] | select(.kind == "route") | {(.name): (.status // .error)}] | add // {}' "$WORK/bundle-manifest.json" 2>/dev/null)
  expect "the bundle holds /v1/oom's answer, 200 (its routes: $(head -c 300 <<<"$routes"))" \
    jq -e 'any(.sections[]; .kind == "route" and .name == "/v1/oom" and .status == 200)' "$WORK/bundle-manifest.json"
  SPORT=$("$NODE_BIN" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
  "$NODE_BIN" dist/cli.js serve --bundle "$BUNDLE" --listen "127.0.0.1:$SPORT" >"$WORK/serve.log" 2>&1 &
  SERVE_PID=$!
  wait_for 120 "serve --bundle answering /readyz" curl -fsS "http://127.0.0.1:$SPORT/readyz" ||
    log "serve --bundle: $(tail -n 5 "$WORK/serve.log")"
  code=$(curl -sS -o "$WORK/bundle-oom.json" -w '%{http_code}' --max-time 60 "http://127.0.0.1:$SPORT/v1/oom" 2>>"$WORK/curl.err") || true
  BKILL=$(kill_of "$WORK/bundle-oom.json" 2>/dev/null) || true
  if [[ $code == 200 && -n $BKILL ]]; then
    tap OK "serve --bundle: /v1/oom has the kill of ${OOM_CID:0:13}: $(jq -c '{process, pid, podUid, seq: .evidence.firstSeq}' <<<"$BKILL")"
    # the time within a second: each agent turns the kernel's µs since boot into a time with
    # its own wall clock minus its monotonic clock, read when it answers, and a TCG guest's
    # wall clock moves against its monotonic one between the two (7.4 ms seen)
    expect "serve --bundle: the same kill as the live agent's (pid, pod and container by UID, ID and name, limit, kmsg sequence; the time within 1 s: $(jq -r .time <<<"$KILL") / $(jq -r .time <<<"$BKILL"))" \
      jq -e -n --argjson a "$KILL" --argjson b "$BKILL" '
        def secs: capture("^(?<s>[^.]+)(\\.(?<f>[0-9]+))?Z$") as $m | ($m.s + "Z" | fromdateiso8601) + ("0." + ($m.f // "0") | tonumber);
        ([$a, $b] | map({pid, podUid, podNamespace, podName, containerName, containerId, memcgLimitKb, process, seq: .evidence.firstSeq}) | .[0] == .[1])
        and ((($a.time | secs) - ($b.time | secs)) | fabs < 1)'
  else
    tap FAIL "serve --bundle: /v1/oom ($code) has the kill of $OOM_CID" "$(head -c 800 "$WORK/bundle-oom.json"; tail -n 5 "$WORK/serve.log")"
  fi
  kill "$SERVE_PID" 2>/dev/null || true
  wait "$SERVE_PID" 2>/dev/null || true
  SERVE_PID=
fi

# --- (8) the agent as a host process on the node, beside these Pods (test/e2e/cluster/host-check.ts) --
jq -s --arg ns "$NS" 'add + {namespace: $ns}' "$WORK/made.jsonl" >"$WORK/made.json"
t3=$(now)
set +e
"$NODE_BIN" --import tsx --test-reporter=tap test/e2e/cluster/host-check.ts "$WORK/made.json" >"$WORK/host-check.tap" 2>&1
rc=$?
set -e
grep -E '^ *(not )?ok [0-9]+ - |^# (pass|fail|skip) ' "$WORK/host-check.tap" | sed 's/^/  # host-check: /'
if [[ $rc == 0 ]]; then
  tap OK "the agent as a host process (serve --host-root /): $(grep -cE '^ok [0-9]+ - ' "$WORK/host-check.tap") checks in $(since "$t3") s"
else
  tap FAIL "the agent as a host process (serve --host-root /): exit $rc; $WORK/host-check.tap" "$(grep -E -A 20 '^ *not ok ' "$WORK/host-check.tap" | head -n 60)"
fi
# it restarted containerd: kubelet says Ready again before the next check asks
wait_for 300 "$NODE Ready again" bash -c "[[ \$(kubectl get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}') == True ]]" ||
  tap FAIL "$NODE Ready within 5 min of the host check"

echo "1..$TAP_N"
if ((TAP_FAILED)); then
  log "$TAP_FAILED of $TAP_N failed ($(since "$t0") s); files in $WORK"
  exit 1
fi
log "passed: $TAP_N of $TAP_N in $(since "$t0") s"
exit 0
}
