#!/usr/bin/env bash
# Stops the tests' SeaweedFS: SIGTERM, then SIGKILL after MH_SEAWEEDFS_STOP_TIMEOUT seconds
# (default 10). Its data (.local/seaweedfs/data) is kept. Safe to run when it is not running.
set -euo pipefail
MH_LOG_TAG=seaweedfs
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

STOP_TIMEOUT="${MH_SEAWEEDFS_STOP_TIMEOUT:-10}"
t0=$(now_ms)
# up.sh calls this while it holds the lock itself.
[[ ${MH_SEAWEEDFS_LOCK_HELD:-} == 1 ]] || take_lock "${SEAWEEDFS_STATE}/up.lock"

if ! pid=$(seaweedfs_pid); then
  rm -f "$SEAWEEDFS_PIDFILE" "$SEAWEEDFS_RUNNING"
  log "not running"
  exit 0
fi
log "stopping (pid $pid)"
stop_pid "$pid" "$STOP_TIMEOUT"
rm -f "$SEAWEEDFS_PIDFILE" "$SEAWEEDFS_RUNNING"
log "stopped ($(elapsed "$t0"))"
