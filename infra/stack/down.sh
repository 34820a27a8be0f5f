#!/usr/bin/env bash
# Stops the processes infra/stack/up.sh started (SIGTERM: each drains and closes; SIGKILL after
# MH_STACK_STOP_TIMEOUT seconds), the front first. Safe to run when nothing runs.
set -euo pipefail
MH_LOG_TAG=stack
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
# shellcheck source=./common.sh
source "$here/common.sh"

[[ -d $STACK_DIR/pids ]] || { log "nothing running from $STACK_DIR"; exit 0; }
order=(gateway)
for f in "$STACK_DIR"/pids/harness-*.pid; do [[ -e $f ]] && order+=("$(basename "$f" .pid)"); done
order+=(offline-model sandbox-broker credential-vault-proxy session-log)
for name in "${order[@]}"; do
  f="$STACK_DIR/pids/$name.pid"
  [[ -e $f ]] || continue
  log "stopping $name"
  stop_pid "$(<"$f")" "$STACK_STOP_TIMEOUT"
  rm -f "$f"
done
log "stack stopped"
