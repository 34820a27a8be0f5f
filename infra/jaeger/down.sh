#!/usr/bin/env bash
# Stops the tests' Jaeger: SIGTERM, then SIGKILL after MH_JAEGER_STOP_TIMEOUT seconds (default
# 10). Its traces are in memory and are lost. Safe to run when it is not running.
set -euo pipefail
MH_LOG_TAG=jaeger
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

STOP_TIMEOUT="${MH_JAEGER_STOP_TIMEOUT:-10}"
t0=$(now_ms)

# up.sh calls this while it holds the lock itself.
[[ ${MH_JAEGER_LOCK_HELD:-} == 1 ]] || take_lock "${JAEGER_STATE}/up.lock"

if ! pid=$(jaeger_pid); then
  rm -f "$JAEGER_PIDFILE" "$JAEGER_RUNNING"
  log "not running"
  exit 0
fi

log "stopping (pid $pid)"
stop_pid "$pid" "$STOP_TIMEOUT"
rm -f "$JAEGER_PIDFILE" "$JAEGER_RUNNING"
log "stopped ($(elapsed "$t0"))"
