#!/usr/bin/env bash
# Stops the tests' Kafka broker: SIGTERM (controlled shutdown), then SIGKILL after
# MH_KAFKA_STOP_TIMEOUT seconds (default 30). Data is kept, so up.sh brings the same topics and
# offsets back. Safe to run when it is not running.
set -euo pipefail
MH_LOG_TAG=kafka
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

STOP_TIMEOUT="${MH_KAFKA_STOP_TIMEOUT:-30}"
t0=$(now_ms)

# up.sh calls this while it holds the lock itself.
[[ ${MH_KAFKA_LOCK_HELD:-} == 1 ]] || take_lock "${KAFKA_STATE}/up.lock"

if ! pid=$(kafka_pid); then
  rm -f "$KAFKA_PIDFILE"
  log "not running"
  exit 0
fi

log "stopping broker (pid $pid)"
stop_pid "$pid" "$STOP_TIMEOUT"
rm -f "$KAFKA_PIDFILE"
log "stopped ($(elapsed "$t0"))"
