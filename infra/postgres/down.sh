#!/usr/bin/env bash
# Stops the tests' PostgreSQL (fast shutdown: open sessions are disconnected). Data is kept.
# Safe to run when it is not running or was never created.
set -euo pipefail
MH_LOG_TAG=postgres
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

t0=$(now_ms)
PG_BIN=$(pg_find_bin)
if [[ -z $PG_BIN ]] || ! pg_load_paths || [[ ! -f $PG_DATA/PG_VERSION ]]; then
  log "no cluster here; nothing to stop"
  exit 0
fi
take_lock "${PG_STATE}/up.lock"
if ! as_pg "$PG_BIN/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1; then
  log "not running"
  exit 0
fi
log "stopping"
if ! as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DATA" -m fast -w -t 60 >/dev/null 9>&-; then
  log "fast shutdown timed out; trying immediate"
  as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DATA" -m immediate -w -t 30 >/dev/null 9>&- || die "could not stop"
fi
log "stopped ($(elapsed "$t0"))"
