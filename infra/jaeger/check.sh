#!/usr/bin/env bash
# Exit 0 when this checkout's Jaeger is running, its query API answers and its OTLP receivers
# accept; changes nothing (the OTLP probe exports an empty request, which stores no span).
set -euo pipefail
MH_LOG_TAG=jaeger
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
pid=$(jaeger_pid) || { log "not running"; exit 1; }
jaeger_query_probe "$JAEGER_QUERY_PORT" || { log "pid $pid is alive but $JAEGER_QUERY_URL/api/services does not answer"; exit 1; }
jaeger_otlp_probe "$JAEGER_OTLP_HTTP_PORT" || { log "pid $pid is alive but $JAEGER_OTLP_ENDPOINT/v1/traces does not accept"; exit 1; }
port_open "$JAEGER_OTLP_GRPC_PORT" || { log "pid $pid is alive but nothing listens on 127.0.0.1:$JAEGER_OTLP_GRPC_PORT (OTLP/gRPC)"; exit 1; }
log "OK: OTLP $JAEGER_OTLP_ENDPOINT, query $JAEGER_QUERY_URL (pid $pid)"
