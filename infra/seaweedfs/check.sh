#!/usr/bin/env bash
# Exit 0 when this checkout's SeaweedFS is running and its S3 gateway answers; changes nothing.
set -euo pipefail
MH_LOG_TAG=seaweedfs
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

pid=$(seaweedfs_pid) || die "not running"
seaweedfs_probe "$SEAWEEDFS_S3_PORT" || die "pid $pid does not answer S3 on ${SEAWEEDFS_ENDPOINT}"
log "ok: S3 ${SEAWEEDFS_ENDPOINT} (pid $pid)"
