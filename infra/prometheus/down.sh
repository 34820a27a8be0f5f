#!/usr/bin/env bash
# Stops the Prometheus of infra/prometheus/up.sh (its data is kept in .local/prometheus).
set -euo pipefail
MH_LOG_TAG=prometheus
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PIDFILE="$MH_LOCAL/prometheus/prometheus.pid"
if pid=$(cat "$PIDFILE" 2>/dev/null) && pid_alive "$pid"; then
  stop_pid "$pid" 30
  log "stopped (pid $pid)"
fi
rm -f "$PIDFILE" "$MH_LOCAL/prometheus/running"
