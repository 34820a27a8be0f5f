#!/usr/bin/env bash
# Builds (when its sources changed) rawcall, the benchmarks' Go gRPC client (main.go says why),
# into .local/bin/rawcall and prints its path. Needs Go (as ghz and the Jaeger the tests use);
# its modules come from the Go module proxy, pinned by go.sum, into .local/go's module cache
# (shared with infra/ghz and infra/jaeger: the go command locks it itself). Safe to run any number
# of times, and from several processes at once.
set -euo pipefail
MH_LOG_TAG=rawcall
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../../../infra/lib.sh
source "$HERE/../../../infra/lib.sh"

BIN="${MH_LOCAL}/bin/rawcall"
STAMP="${MH_LOCAL}/rawcall/bin.stamp"
sources_hash() { cat "$HERE/go.mod" "$HERE/go.sum" "$HERE/main.go" | sha256sum | cut -d' ' -f1; }
built() { [[ -x $BIN && "$(cat "$STAMP" 2>/dev/null)" == "$(sources_hash)" ]]; }
if built; then
  echo "$BIN"
  exit 0
fi

t0=$(now_ms)
mkdir -p "$(dirname "$BIN")" "$(dirname "$STAMP")"
take_lock "$(dirname "$STAMP")/build.lock"
if built; then
  echo "$BIN"
  exit 0
fi
go_bin=$(find_go "rawcall is built from source")
log "building $BIN with $("$go_bin" env GOVERSION) (about a minute the first time)"
rm -f "$STAMP"
# As infra/ghz/install.sh: caches in the checkout, never another Go, no cgo, go.sum as it is;
# 9>&-: the compiler must not inherit our lock.
if ! (cd "$HERE" && env GOPATH="${MH_LOCAL}/go" GOMODCACHE="${MH_LOCAL}/go/pkg/mod" GOCACHE="${MH_LOCAL}/rawcall/cache" \
  GOFLAGS="-modcacherw -mod=readonly" GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 \
  "$go_bin" build -trimpath -o "$BIN" . >"${MH_LOCAL}/rawcall/build.log" 2>&1 9>&-); then
  show_tail 30 "${MH_LOCAL}/rawcall/build.log"
  die "go build failed (log: ${MH_LOCAL}/rawcall/build.log)"
fi
sources_hash >"$STAMP"
log "built $BIN in $(elapsed "$t0")"
echo "$BIN"
