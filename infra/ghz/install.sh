#!/usr/bin/env bash
# Builds (once per machine) ghz, a gRPC load generator written in Go, and prints its path.
# Only the benchmarks use it: a client whose own pauses (Go's collector is concurrent, sub-ms)
# stay out of the latencies it reports, beside the Node client the benchmarks otherwise use
# (test/bench/lib/ghz.ts). Pinned; built from the Go module proxy with `go install <pkg>@<version>`
# (about a minute on 2 cores) into MH_CACHE, outside the checkout (build_cached in ../lib.sh), so
# a fresh clone reuses it. Safe to run any number of times, from several checkouts at once.
set -euo pipefail
MH_LOG_TAG=ghz
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

GHZ_MODULE="github.com/bojand/ghz/cmd/ghz"
GHZ_VERSION="v0.120.0"
GHZ_BIN="$(cached_bin ghz "$GHZ_VERSION")"
t0=$(now_ms)

if [[ ! -x $GHZ_BIN ]]; then
  go_bin=$(find_go "ghz is built from source")
  log "building ghz ${GHZ_VERSION} with $("$go_bin" env GOVERSION) into $GHZ_BIN (once per machine; about a minute)"
  # shellcheck disable=SC2016  # expanded by the inner shell, where build_cached sets MH_BUILD_STAGE
  build_cached ghz "$GHZ_VERSION" "$MH_LOCAL/ghz/build.log" \
    bash -c 'GOBIN="$MH_BUILD_STAGE" exec "$1" install -trimpath "$2"' _ "$go_bin" "${GHZ_MODULE}@${GHZ_VERSION}"
  log "built $GHZ_BIN in $(elapsed "$t0")"
fi
echo "$GHZ_BIN"
