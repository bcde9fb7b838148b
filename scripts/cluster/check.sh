# What the check scripts of scripts/cluster/ share, sourced once CHECK_NAME is set (and
# CHECK_POLL, the seconds between two tries of wait_for; 1 unless set): their log lines, the
# timing and waiting helpers, the tools they need, and tap.sh's TAP lines.
log() { echo "$CHECK_NAME: $*" >&2; }
die() { log "$*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
. scripts/cluster/tap.sh
wait_for() { # wait_for SECONDS WHAT CMD...: CMD again until it succeeds or SECONDS have passed
  local secs=$1 what=$2 deadline
  shift 2
  deadline=$(($(date +%s) + secs))
  until "$@" >/dev/null 2>&1; do
    (($(date +%s) < deadline)) || { log "$what: not so after $secs s"; return 1; }
    sleep "${CHECK_POLL:-1}"
  done
}
need_tools() { # need_tools TOOL...: die naming the first one not on PATH
  local tool
  for tool in "$@"; do command -v "$tool" >/dev/null || die "$tool is not on PATH"; done
}
