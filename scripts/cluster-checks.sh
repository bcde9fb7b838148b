#!/usr/bin/env bash
# The end-to-end checks against real Kubernetes components (scripts/dev-cluster.sh), per
# guest suite: up, check, attach-check with the release's kubectl (and again with the
# machine's own kubectl when it has one), daemonset-check, fleet-check, workload-check
# (NODETRUTH_WORKLOAD_CHECK=0 leaves it out), cert-check, runtime-check, drift-check, then down. A suite
# whose `up` fails skips its checks; every check runs even when an earlier one failed; the
# cluster is always taken down (trap). Exits non-zero when anything failed.
#
#   bash scripts/cluster-checks.sh                 # the sid guest
#   NODETRUTH_CLUSTER_SUITES="bookworm sid" bash scripts/cluster-checks.sh
#   NODETRUTH_CLUSTER_SUITES="bookworm:no-journal" bash scripts/cluster-checks.sh
#                                                  # a node without journald (up --no-journal):
#                                                  # attach-check also reads kubelet's log file
#   NODETRUTH_CLUSTER_SUITES="sid bookworm:node-checks" bash scripts/cluster-checks.sh
#                                                  # bookworm with the checks whose answers come
#                                                  # from the node (its containerd, kernel, systemd)
#                                                  # only: not the machine's own kubectl,
#                                                  # fleet-check nor cert-check, which ask the
#                                                  # same API server and kubelet binary again
#
# The binaries come from scripts/kube-build.sh (cached; cold 10–26 min on 2 cores):
# scripts/test.sh starts that build early, in the background.
set -euo pipefail
cd "$(dirname "$0")/.."
SUITES=${NODETRUTH_CLUSTER_SUITES:-sid}
DC=(bash scripts/dev-cluster.sh)
failed=()
trap '"${DC[@]}" down >/dev/null 2>&1 || true' EXIT

now() { date +%s; }
step() { # step SUITE NAME ARGS...: one dev-cluster.sh subcommand, timed, its failure recorded
  local suite=$1 name=$2 t0 rc
  shift 2
  t0=$(now)
  echo "# cluster-checks: $suite: $name"
  set +e
  "${DC[@]}" "$@"
  rc=$?
  set -e
  echo "# cluster-checks: $suite: $name exit $rc after $(($(now) - t0)) s"
  ((rc == 0)) || failed+=("$suite:$name")
  return "$rc"
}

DIR=${NODETRUTH_DEV_CLUSTER_DIR:-.dev-cluster}
guest_panicked() { [[ -f $DIR/node/serial.log ]] && grep -q 'Kernel panic' "$DIR/node/serial.log"; }
t_all=$(now)
for suite in $SUITES; do
  up_args=(--suite "${suite%%:*}")
  mods=:${suite#"${suite%%:*}"}:
  [[ $mods == *:no-journal:* ]] && up_args+=(--no-journal)
  all=1
  [[ $mods == *:node-checks:* ]] && all=0
  up_ok=0
  if step "$suite" up up "${up_args[@]}"; then
    up_ok=1
  elif guest_panicked; then
    # the guest's kernel panicked under TCG (test/e2e/vm.ts, NodeVm.panicked): a new guest, once
    kept=$(mktemp "${TMPDIR:-/tmp}/nodetruth-cluster-panic.XXXXXX")
    cp "$DIR/node/serial.log" "$kept"
    echo "# cluster-checks: $suite: the guest's kernel panicked during up (its serial log: $kept); up once more"
    step "$suite" down down || true
    if step "$suite" "up (again)" up "${up_args[@]}"; then
      up_ok=1
      # the panic was the emulator's: the first up's failure is not the run's
      kept_failed=()
      for f in "${failed[@]}"; do [[ $f == "$suite:up" || $f == "$suite:down" ]] || kept_failed+=("$f"); done
      failed=("${kept_failed[@]+"${kept_failed[@]}"}")
    fi
  fi
  if ((up_ok)); then
    step "$suite" check check || true
    step "$suite" attach-check attach-check || true
    own=$(command -v kubectl || true)
    if ((all)) && [[ -n $own && $(realpath "$own") != "$(realpath "$(cat "$DIR/bin" 2>/dev/null)/kubectl" 2>/dev/null)" ]]; then
      step "$suite" "attach-check (own kubectl $own)" attach-check --kubectl "$own" || true
    fi
    step "$suite" daemonset-check daemonset-check || true
    if ((all)); then step "$suite" fleet-check fleet-check || true; fi
    # the workload scenarios as real Pods: minutes of kubelet's restart back-off and a capture
    if [[ ${NODETRUTH_WORKLOAD_CHECK:-1} = 1 ]]; then step "$suite" workload-check workload-check || true; fi
    if ((all)); then step "$suite" cert-check cert-check || true; fi
    step "$suite" runtime-check runtime-check || true
    step "$suite" drift-check drift-check || true
  fi
  step "$suite" down down || true
done
echo "# cluster-checks: $SUITES in $(($(now) - t_all)) s"
if ((${#failed[@]})); then
  echo "# cluster-checks FAILED: ${failed[*]}"
  exit 1
fi
echo "# cluster-checks: all passed"
