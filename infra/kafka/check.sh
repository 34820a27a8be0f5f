#!/usr/bin/env bash
# Exit 0 when this checkout's broker is running and answers a Kafka request; changes nothing.
set -euo pipefail
MH_LOG_TAG=kafka
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
pid=$(kafka_pid) || { log "not running"; exit 1; }
kafka_probe "$KAFKA_PORT" || { log "pid $pid is alive but $KAFKA_BROKERS does not answer"; exit 1; }
log "OK: $KAFKA_BROKERS (pid $pid)"
