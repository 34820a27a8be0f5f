#!/usr/bin/env bash
# Builds (when its sources changed) rawcall, the benchmarks' Go gRPC client (main.go says why),
# into MH_CACHE (outside the checkout, keyed by a hash of its sources: build_cached in
# infra/lib.sh) and prints its path. Needs Go (as ghz and the Jaeger the tests use); its modules
# come from the Go module proxy, pinned by go.sum. Safe to run any number of times, and from
# several processes at once.
set -euo pipefail
MH_LOG_TAG=rawcall
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../../infra/lib.sh
source "$HERE/../../../infra/lib.sh"

sources_hash() { cat "$HERE/go.mod" "$HERE/go.sum" "$HERE/main.go" | sha256sum | cut -c1-16; }
KEY=$(sources_hash)
BIN="$(cached_bin rawcall "$KEY")"
if [[ ! -x $BIN ]]; then
  t0=$(now_ms)
  go_bin=$(find_go "rawcall is built from source")
  log "building $BIN with $("$go_bin" env GOVERSION) (about a minute the first time)"
  # go.sum as it is (-mod=readonly).
  # shellcheck disable=SC2016  # expanded by the inner shell, where build_cached sets MH_BUILD_STAGE
  build_cached rawcall "$KEY" "$MH_LOCAL/rawcall/build.log" \
    bash -c 'cd "$1" && exec "$2" build -mod=readonly -trimpath -o "$MH_BUILD_STAGE/rawcall" .' _ "$HERE" "$go_bin"
  log "built $BIN in $(elapsed "$t0")"
fi
echo "$BIN"
