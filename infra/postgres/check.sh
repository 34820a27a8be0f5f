#!/usr/bin/env bash
# Exit 0 when PostgreSQL answers on 127.0.0.1:$MH_PG_PORT and accepts the metaharness login;
# changes nothing.
set -euo pipefail
MH_LOG_TAG=postgres
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -t 2 || { log "nothing answers on 127.0.0.1:$PG_PORT"; exit 1; }
v=$(PGPASSWORD="$PG_APP_PASSWORD" PGCONNECT_TIMEOUT=3 psql -X -At -w -h 127.0.0.1 -p "$PG_PORT" \
  -U "$PG_APP_USER" -d "$PG_APP_DB" -c 'show server_version' 2>&1) \
  || { log "server answers but login as $PG_APP_USER fails: $v"; exit 1; }
log "OK: $PG_URL (server $v)"
