#!/usr/bin/env bash
# `nodetruth fleet triage` against the real dev cluster (scripts/dev-cluster.sh fleet-check,
# which sets the environment below): the DaemonSet's agent on the real node, plus Node
# objects with no kubelet — one Ready with no agent, one NotReady — asked by a caller that
# holds exactly deploy/fleet/rbac.yaml and the agents' nodetruth-reader, with its own token
# in a kubeconfig of its own. Checks, as TAP:
#   - one row per node: the real node answered (a verdict), each Node without an agent a
#     row saying so (the NotReady one with its note); the exit code is the worst verdict's
#   - a caller without nodetruth-reader: the agent's own 403 in the real node's row
#   - the API server's audit log: the caller's pods/portforward of the agent pod, under the
#     caller's name; the agent's ServiceAccount's TokenReviews and SubjectAccessReviews
#   - the agent's own audit line: GET /v1/triage, 200, the caller's name
#   - --attach on the Node without an agent (deploy/attach-rbac.yaml bound to the caller): its
#     debug pod never starts (no kubelet), the row is cut at --timeout, the pod is deleted
#     (audit: the caller's create and delete)
# The agent's certificate is taken through a port-forward and checked against the public-key
# pin the agent logged at start, then given to fleet as --agent-ca.
# Everything it creates (the extra Nodes, the callers' namespace and bindings) is deleted at
# the end, whatever failed; the DaemonSet is left as daemonset-check leaves it.
#
# Environment (scripts/dev-cluster.sh fleet_check):
#   KUBECONFIG                  the cluster's admin kubeconfig
#   PATH                        the release's kubectl first
#   NODETRUTH_DEV_CLUSTER_DIR   the cluster's directory (absolute): audit.log, kubeconfig
#   NODETRUTH_DEV_NODE          the real node's name (node1)
# Run: bash scripts/dev-cluster.sh fleet-check (after daemonset-check, whose DaemonSet has the
# startup probe a node under TCG needs; without a DaemonSet this applies deploy/daemonset/core)
set -euo pipefail
cd "$(dirname "$0")/../.."

DIR=${NODETRUTH_DEV_CLUSTER_DIR:?set by scripts/dev-cluster.sh fleet-check}
NODE=${NODETRUTH_DEV_NODE:-node1}
[[ -f ${KUBECONFIG:-} ]] || KUBECONFIG=$DIR/kubeconfig
export KUBECONFIG
AGENT_NS=nodetruth
AGENT_SELECTOR=app.kubernetes.io/name=nodetruth,app.kubernetes.io/component=agent
NS=nodetruth-fleet-check
GHOST=fleet-check-noagent
DOWN=fleet-check-notready
WORK=$DIR/fleet-check
mkdir -p "$WORK"
chmod 700 "$WORK"

CHECK_NAME=fleet-check
. scripts/cluster/check.sh
need_tools kubectl jq openssl npx

PF_PID=
cleanup() {
  [[ -n $PF_PID ]] && kill "$PF_PID" 2>/dev/null || true
  kubectl delete node "$GHOST" "$DOWN" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kubectl delete clusterrolebinding "$NS-nodes" "$NS-reader" "$NS-attach-nodes" --ignore-not-found >/dev/null 2>&1 || true
  kubectl -n nodetruth-attach delete rolebinding "$NS-attach" --ignore-not-found >/dev/null 2>&1 || true
  kubectl -n "$AGENT_NS" delete rolebinding "$NS" --ignore-not-found >/dev/null 2>&1 || true
  kubectl delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT
t0=$(now)
ts=$(date -u +%Y-%m-%dT%H:%M:%S)

# --- the agent on the real node ------------------------------------------------------------
if ! kubectl -n "$AGENT_NS" get ds nodetruth >/dev/null 2>&1; then
  log "no DaemonSet yet: kubectl apply -k deploy/daemonset/core"
  kubectl apply -k deploy/daemonset/core >/dev/null
fi
agent_pod() {
  kubectl -n "$AGENT_NS" get pods -l "$AGENT_SELECTOR" --field-selector "spec.nodeName=$NODE" -o json |
    jq -r '[.items[] | select(.metadata.deletionTimestamp == null and any(.status.conditions[]?; .type == "Ready" and .status == "True"))][0].metadata.name // empty'
}
# under TCG the agent takes tens of seconds to load before its first probe answers
POD=
deadline=$(($(date +%s) + 900))
until POD=$(agent_pod) && [[ -n $POD ]]; do
  (($(date +%s) < deadline)) || die "no Ready agent pod on $NODE after 900 s"
  sleep 2
done
LISTEN='--listen=$(POD_IP):7070,127.0.0.1:7071'
expect "the agent listens on the node's address and its loopback ($LISTEN)" \
  bash -c "kubectl -n $AGENT_NS get pod $POD -o json | jq -e --arg a '$LISTEN' 'any(.spec.containers[0].args[]; . == \$a)'"

# Its certificate, through a port-forward to its loopback port, checked against the key pin it logged.
PIN=$(kubectl -n "$AGENT_NS" logs "$POD" | jq -r 'select(.tls.enabled == true) | .tls.publicKeyPin' 2>/dev/null | tail -n 1) || true
kubectl -n "$AGENT_NS" port-forward "pod/$POD" :7071 --address=127.0.0.1 >"$WORK/pf.out" 2>"$WORK/pf.err" &
PF_PID=$!
wait_for 60 "the admin's port-forward listening" grep -q '^Forwarding from 127.0.0.1:' "$WORK/pf.out" ||
  die "kubectl port-forward pod/$POD :7071: $(cat "$WORK/pf.err")"
LPORT=$(sed -n 's/^Forwarding from 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$WORK/pf.out" | head -n 1)
# asked again: the first connection through a fresh port-forward can fail on a TCG node
# (bookworm's containerd 1.6: no certificate on the first try, nothing in kubectl's stderr)
for ((i = 0; i < 6; i++)); do
  timeout 60 openssl s_client -connect "127.0.0.1:$LPORT" </dev/null 2>/dev/null | openssl x509 >"$WORK/agent-ca.pem" 2>/dev/null && break
  sleep 5
done
kill "$PF_PID" 2>/dev/null || true
wait "$PF_PID" 2>/dev/null || true
PF_PID=
GOT_PIN=
[[ -s $WORK/agent-ca.pem ]] &&
  GOT_PIN=sha256//$(openssl x509 -in "$WORK/agent-ca.pem" -noout -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
if [[ -n $PIN && $GOT_PIN == "$PIN" ]]; then
  tap OK "a port-forward to 127.0.0.1:7071 in the hostNetwork pod reaches the agent over TLS: the certificate it logged ($PIN)"
else
  tap FAIL "a port-forward to 127.0.0.1:7071 in the hostNetwork pod reaches the agent over TLS" "logged pin '$PIN', got '$GOT_PIN'; $(tail -n 3 "$WORK/pf.err")"
  die "the agent cannot be reached by port-forward; no point asking fleet"
fi

# --- Nodes without a kubelet -----------------------------------------------------------------
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata: {name: $GHOST, labels: {nodetruth.dev/fleet-check: "true"}}
---
apiVersion: v1
kind: Node
metadata: {name: $DOWN, labels: {nodetruth.dev/fleet-check: "true"}}
YAML
hb=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cond() { # cond STATUS REASON
  printf '{"status":{"conditions":[{"type":"Ready","status":"%s","reason":"%s","message":"fleet-check","lastHeartbeatTime":"%s","lastTransitionTime":"%s"}]}}' "$1" "$2" "$hb" "$hb"
}
kubectl patch node "$GHOST" --subresource=status --type=merge -p "$(cond True KubeletReady)" >/dev/null
kubectl patch node "$DOWN" --subresource=status --type=merge -p "$(cond False KubeletNotReady)" >/dev/null
expect "Node $DOWN NotReady in the API" bash -c "[[ \$(kubectl get node $DOWN -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}') != True ]]"

# --- the callers: fleet's RBAC; one also the agents' reader -----------------------------------
kubectl apply -f deploy/fleet/rbac.yaml >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: oncall, namespace: $NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: stranger, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $NS-nodes}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: nodetruth-fleet-nodes}
subjects:
  - {kind: ServiceAccount, name: oncall, namespace: $NS}
  - {kind: ServiceAccount, name: stranger, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: $NS, namespace: $AGENT_NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: nodetruth-fleet}
subjects:
  - {kind: ServiceAccount, name: oncall, namespace: $NS}
  - {kind: ServiceAccount, name: stranger, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $NS-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: nodetruth-reader}
subjects: [{kind: ServiceAccount, name: oncall, namespace: $NS}]
YAML
wait_for 60 "ServiceAccount oncall" kubectl -n "$NS" get serviceaccount oncall
SERVER=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')
kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$WORK/cluster-ca.pem"
caller_kubeconfig() { # caller_kubeconfig SA: a kubeconfig of its own with a 1 h token
  local sa=$1 kc=$WORK/$1.kubeconfig
  rm -f "$kc"
  (umask 077
    kubectl config --kubeconfig="$kc" set-cluster dev --server="$SERVER" --certificate-authority="$WORK/cluster-ca.pem" --embed-certs >/dev/null
    kubectl config --kubeconfig="$kc" set-credentials "$sa" --token="$(kubectl -n "$NS" create token "$sa" --duration=1h)" >/dev/null
    kubectl config --kubeconfig="$kc" set-context dev --cluster=dev --user="$sa" >/dev/null
    kubectl config --kubeconfig="$kc" use-context dev >/dev/null)
  echo "$kc"
}
ONCALL_KC=$(caller_kubeconfig oncall)
STRANGER_KC=$(caller_kubeconfig stranger)
USER_ONCALL=system:serviceaccount:$NS:oncall
# the API server's RBAC authorizer sees new bindings through its informers: a moment later
expect "the caller may port-forward to the agent pod (deploy/fleet/rbac.yaml)" \
  wait_for 30 "oncall's create pods/portforward" bash -c "[[ \$(kubectl --kubeconfig='$ONCALL_KC' auth can-i create pods --subresource=portforward -n $AGENT_NS) == yes ]]"
# (`can-i VERB pods/NAME` asks about a pod named NAME: a subresource is --subresource)
expect "and nothing on nodes/proxy" bash -c "[[ \$(kubectl --kubeconfig='$ONCALL_KC' auth can-i get nodes --subresource=proxy) == no ]]"

# --- fleet triage -----------------------------------------------------------------------------
fleet() { # fleet KUBECONFIG OUT ARGS...: the exit code
  local kc=$1 out=$2 rc=0
  shift 2
  KUBECONFIG=$kc npx --no-install tsx src/cli.ts fleet triage --agent-ca "$WORK/agent-ca.pem" --timeout 120s "$@" >"$out" 2>"$out.err" || rc=$?
  echo "$rc"
}
NODES=$NODE,$GHOST,$DOWN
t1=$(now)
rc=$(fleet "$ONCALL_KC" "$WORK/oncall.json" -o json --nodes "$NODES")
log "fleet triage as oncall: exit $rc in $(since "$t1") s"
if ! jq -e 'type == "array"' "$WORK/oncall.json" >/dev/null 2>&1; then
  tap FAIL "fleet triage -o json printed rows" "$(head -c 1500 "$WORK/oncall.json"; tail -n 5 "$WORK/oncall.json.err")"
else
  expect "one row per node ($(jq -c 'map(.node)' "$WORK/oncall.json"))" \
    jq -e --arg a "$NODE" --arg b "$GHOST" --arg c "$DOWN" 'map(.node) | sort == ([$a, $b, $c] | sort)' "$WORK/oncall.json"
  row() { jq -c --arg n "$1" '.[] | select(.node == $n) | del(.findings)' "$WORK/oncall.json"; }
  if jq -e --arg n "$NODE" '.[] | select(.node == $n) | .verdict | IN("ok", "warning", "critical")' "$WORK/oncall.json" >/dev/null; then
    tap OK "$NODE answered through the API server: $(row "$NODE")"
  else
    tap FAIL "$NODE answered through the API server" "$(row "$NODE"); $(tail -n 5 "$WORK/oncall.json.err")"
  fi
  expect "$GHOST: a row saying it has no agent ($(row "$GHOST"))" \
    jq -e --arg n "$GHOST" '.[] | select(.node == $n) | .error | test("no agent pod|not Running")' "$WORK/oncall.json"
  expect "$DOWN: a row saying no agent, noted NotReady ($(row "$DOWN"))" \
    jq -e --arg n "$DOWN" '.[] | select(.node == $n) | (.error | test("no agent pod|not Running")) and any(.notes[]; startswith("NotReady"))' "$WORK/oncall.json"
  verdict=$(jq -r --arg n "$NODE" '.[] | select(.node == $n) | .verdict // "error"' "$WORK/oncall.json")
  want=3
  [[ $verdict == critical ]] && want=2
  expect "exit $rc = the worst verdict's ($want: $NODE $verdict, two nodes not answered)" test "$rc" == "$want"
  expect "progress on stderr" grep -q 'nodes done' "$WORK/oncall.json.err"
fi
rc=$(fleet "$ONCALL_KC" "$WORK/oncall.txt" --nodes "$NODES")
expect "the text roll-up: a line per node, worst first, then the blocks (exit $rc)" \
  bash -c "grep -q '^NODE ' '$WORK/oncall.txt' && grep -q '^$NODE ' '$WORK/oncall.txt' && grep -q '^---------------- not answered on 2 nodes' '$WORK/oncall.txt'"
sed 's/^/  # /' "$WORK/oncall.txt" | head -n 30

rc=$(fleet "$STRANGER_KC" "$WORK/stranger.json" -o json --nodes "$NODE")
expect "a caller without nodetruth-reader: the agent's own 403 in the row, exit 3 (got $rc: $(jq -c '.[0].error' "$WORK/stranger.json" 2>/dev/null))" \
  bash -c "[[ $rc == 3 ]] && jq -e '.[0].error | startswith(\"agent answered 403\")' '$WORK/stranger.json'"

# --- --attach on a Node without a kubelet: its debug pod never starts, is cut and deleted -------
kubectl apply -f deploy/attach-rbac.yaml >/dev/null
kubectl create clusterrolebinding "$NS-attach-nodes" --clusterrole=nodetruth-attach-nodes --serviceaccount="$NS:oncall" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl -n nodetruth-attach create rolebinding "$NS-attach" --role=nodetruth-attach --serviceaccount="$NS:oncall" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
rc=$(fleet "$ONCALL_KC" "$WORK/attach.json" -o json --attach --attach-namespace nodetruth-attach --timeout 30s --nodes "$GHOST")
expect "--attach on $GHOST (no kubelet): a row cut at its deadline, exit 3 (got $rc: $(jq -c '.[0] | {error, notes}' "$WORK/attach.json" 2>/dev/null))" \
  bash -c "[[ $rc == 3 ]] && jq -e '.[0].error == \"timed out after 30s\" and any(.[0].notes[]; test(\"--attach\"))' '$WORK/attach.json'"
DEBUG_POD=$(jq -r --arg u "$USER_ONCALL" --arg ts "$ts" 'select(.verb == "create" and .objectRef.resource == "pods" and (.objectRef.subresource // "") == ""
    and .objectRef.namespace == "nodetruth-attach" and .user.username == $u and .stageTimestamp >= $ts) | .objectRef.name // .responseObject.metadata.name // empty' "$DIR/audit.log" | tail -n 1)
expect "audit: $USER_ONCALL created the debug pod nodetruth-attach/${DEBUG_POD:-?} on $GHOST" test -n "$DEBUG_POD"
expect "audit: and deleted it" bash -c "jq -e --arg u '$USER_ONCALL' --arg p '$DEBUG_POD' 'select(.verb == \"delete\" and .objectRef.resource == \"pods\" and .objectRef.name == \$p and .user.username == \$u)' '$DIR/audit.log'"
# a pod bound to a Node without a kubelet stays Terminating until the Node goes (cleanup deletes it)
expect "the debug pod is gone or terminating" bash -c "[[ -z \$(kubectl -n nodetruth-attach get pod '$DEBUG_POD' --ignore-not-found -o name) ]] || kubectl -n nodetruth-attach get pod '$DEBUG_POD' -o json | jq -e '.metadata.deletionTimestamp != null'"

# --- the audit trails -------------------------------------------------------------------------
pf=0
for ((i = 0; i < 20; i++)); do
  pf=$(jq -c --arg u "$USER_ONCALL" --arg p "$POD" --arg ns "$AGENT_NS" --arg ts "$ts" 'select(.user.username == $u
      and .objectRef.resource == "pods" and .objectRef.subresource == "portforward" and .objectRef.namespace == $ns
      and .objectRef.name == $p and .stageTimestamp >= $ts)' "$DIR/audit.log" | wc -l)
  ((pf >= 2)) && break
  sleep 0.5
done
expect "audit: $USER_ONCALL's pods/portforward of $AGENT_NS/$POD ($pf events: one session per run, each ResponseStarted and ResponseComplete)" test "$pf" -ge 2
jq -c --arg u "$USER_ONCALL" --arg ts "$ts" 'select(.user.username == $u and .objectRef.subresource == "portforward" and .stageTimestamp >= $ts)
    | {stage, verb, user: .user.username, pod: .objectRef.name, code: .responseStatus.code, sourceIPs, userAgent}' "$DIR/audit.log" |
  head -n 4 | sed 's/^/  # /'
expect "audit: no pods/portforward on the Nodes without an agent, no nodes/proxy" \
  bash -c "! jq -e --arg ts '$ts' 'select(.stageTimestamp >= \$ts and ((.objectRef.resource == \"nodes\" and .objectRef.subresource == \"proxy\") or (.objectRef.subresource == \"portforward\" and .objectRef.name != \"$POD\")))' '$DIR/audit.log'"
sa=system:serviceaccount:$AGENT_NS:nodetruth
tr=$(jq -c --arg sa "$sa" --arg ts "$ts" 'select(.objectRef.resource == "tokenreviews" and .user.username == $sa and .stageTimestamp >= $ts)' "$DIR/audit.log" | wc -l)
sar=$(jq -c --arg sa "$sa" --arg ts "$ts" 'select(.objectRef.resource == "subjectaccessreviews" and .user.username == $sa and .stageTimestamp >= $ts)' "$DIR/audit.log" | wc -l)
expect "audit: the agent reviewed the callers' tokens ($tr tokenreviews, $sar subjectaccessreviews, by $sa)" bash -c "((${tr:-0} >= 2 && ${sar:-0} >= 2))"
kubectl -n "$AGENT_NS" logs "$POD" >"$WORK/agent.log"
expect "the agent's own audit line: GET /v1/triage 200 for $USER_ONCALL" \
  jq -e -s --arg u "$USER_ONCALL" 'any(.[]; .audit != null and .audit.route == "/v1/triage" and .audit.status == 200 and .audit.user == $u)' "$WORK/agent.log"
expect "and 403 for the stranger" \
  jq -e -s --arg u "system:serviceaccount:$NS:stranger" 'any(.[]; .audit != null and .audit.route == "/v1/triage" and .audit.status == 403 and .audit.user == $u)' "$WORK/agent.log"

echo "1..$TAP_N"
if ((TAP_FAILED)); then
  log "$TAP_FAILED of $TAP_N failed ($(since "$t0") s); files in $WORK"
  exit 1
fi
log "passed: $TAP_N of $TAP_N in $(since "$t0") s"
