# TAP-like lines on stdout for the cluster checks that assert many things (sourced by
# scripts/dev-cluster.sh and, through scripts/cluster/check.sh, by the check scripts beside it):
# each failure is counted, and the check exits non-zero at its end.
TAP_N=0
TAP_FAILED=0
tap() { # tap OK|FAIL DESCRIPTION [DETAIL]
  TAP_N=$((TAP_N + 1))
  if [[ $1 == OK ]]; then
    echo "ok $TAP_N - $2"
  else
    TAP_FAILED=$((TAP_FAILED + 1))
    echo "not ok $TAP_N - $2"
    [[ -n ${3:-} ]] && sed 's/^/  # /' <<<"$3"
  fi
  return 0
}
# expect DESCRIPTION CMD...: ok when CMD succeeds
expect() {
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then tap OK "$what"; else tap FAIL "$what"; fi
}
