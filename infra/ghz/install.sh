#!/usr/bin/env bash
# Builds (once) ghz, a gRPC load generator written in Go, into .local/bin/ghz and prints its path.
# Only the benchmarks use it: a client whose own pauses (Go's collector is concurrent, sub-ms)
# stay out of the latencies it reports, beside the Node client the benchmarks otherwise use
# (test/bench/lib/ghz.ts). Pinned; built from the Go module proxy with `go install <pkg>@<version>`
# (about a minute on 2 cores). Go's module cache is .local/go's, shared with infra/jaeger (the go
# command locks it itself); the build cache is this script's own, removed after the build, so it
# never removes one a Jaeger build is using. Safe to run any number of times.
set -euo pipefail
MH_LOG_TAG=ghz
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

GHZ_MODULE="github.com/bojand/ghz/cmd/ghz"
GHZ_VERSION="v0.120.0"
GHZ_BIN="${MH_LOCAL}/bin/ghz"
GHZ_STAMP="${MH_LOCAL}/ghz/bin.stamp"
GHZ_GOPATH="${MH_LOCAL}/go"
GHZ_GOCACHE="${MH_LOCAL}/ghz/cache"
t0=$(now_ms)

built() { [[ -x $GHZ_BIN && "$(cat "$GHZ_STAMP" 2>/dev/null)" == "$GHZ_VERSION" ]]; }
if built; then
  echo "$GHZ_BIN"
  exit 0
fi

mkdir -p "$(dirname "$GHZ_BIN")" "$(dirname "$GHZ_STAMP")"
take_lock "$(dirname "$GHZ_STAMP")/install.lock"
# Another run may have built it while we waited for the lock.
if built; then
  echo "$GHZ_BIN"
  exit 0
fi
go_bin=$(find_go "ghz is built from source")
log "building ghz ${GHZ_VERSION} with $("$go_bin" env GOVERSION) into $GHZ_BIN (once; about a minute)"
rm -f "$GHZ_STAMP"
# As infra/jaeger/up.sh: caches in the checkout, a writable module cache, never another Go, no cgo;
# 9>&-: the compiler must not inherit our lock.
go_env=(GOBIN="$(dirname "$GHZ_BIN")" GOPATH="$GHZ_GOPATH" GOMODCACHE="$GHZ_GOPATH/pkg/mod"
  GOCACHE="$GHZ_GOCACHE" GOFLAGS="-modcacherw" GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0)
if ! env "${go_env[@]}" "$go_bin" install -trimpath "${GHZ_MODULE}@${GHZ_VERSION}" >"${MH_LOCAL}/ghz/build.log" 2>&1 9>&-; then
  show_tail 30 "${MH_LOCAL}/ghz/build.log"
  die "go install failed (log: ${MH_LOCAL}/ghz/build.log)"
fi
[[ -x $GHZ_BIN ]] || die "go install finished but $GHZ_BIN is missing"
echo "$GHZ_VERSION" >"$GHZ_STAMP"
env "${go_env[@]}" "$go_bin" clean -cache >/dev/null 2>&1 9>&- || true
log "built $GHZ_BIN in $(elapsed "$t0")"
echo "$GHZ_BIN"
