#!/usr/bin/env bash
# Builds (once), starts and checks the tests' Jaeger v2: an OTLP receiver keeping spans in memory,
# with the query API and UI. Safe to run any number of times, and quick when it already answers.
# The first run on a machine builds the binary from the Go module proxy (`go install tool` in this
# folder; about 6 minutes on 2 cores) into MH_CACHE (default ~/.cache/metaharness), outside the
# checkout; later runs, fresh clones included, reuse it.
# Traces do not survive a restart. stdout: the environment for the tests; progress to stderr.
#   MH_OTLP_ENDPOINT=http://127.0.0.1:4318
#   MH_JAEGER_QUERY_URL=http://127.0.0.1:16686
#
#   MH_JAEGER_OTLP_HTTP_PORT   OTLP/HTTP receiver on 127.0.0.1 (default 4318)
#   MH_JAEGER_OTLP_GRPC_PORT   OTLP/gRPC receiver on 127.0.0.1 (default 4317)
#   MH_JAEGER_QUERY_PORT       query API and UI on 127.0.0.1 (default 16686)
#   MH_JAEGER_QUERY_GRPC_PORT  query gRPC API on 127.0.0.1 (default 16685)
#   MH_JAEGER_START_TIMEOUT    seconds to wait for readiness (default 30)
#   MH_JAEGER_UI_ASSETS        a built jaeger-ui to serve at / (default: the binary's placeholder page)
set -euo pipefail
MH_LOG_TAG=jaeger
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

START_TIMEOUT="${MH_JAEGER_START_TIMEOUT:-30}"
UI_ASSETS="${MH_JAEGER_UI_ASSETS:-}"
PORTS=("$JAEGER_OTLP_HTTP_PORT" "$JAEGER_OTLP_GRPC_PORT" "$JAEGER_QUERY_PORT" "$JAEGER_QUERY_GRPC_PORT")
t0=$(now_ms)

for p in "${PORTS[@]}"; do
  [[ $p =~ ^[0-9]+$ ]] || die "MH_JAEGER_*_PORT must be numbers, got '$p'"
done
[[ $(printf '%s\n' "${PORTS[@]}" | sort -u | wc -l) == "${#PORTS[@]}" ]] || die "the four MH_JAEGER_*_PORT must differ"
[[ -z $UI_ASSETS || -f $UI_ASSETS/index.html ]] || die "MH_JAEGER_UI_ASSETS=$UI_ASSETS has no index.html"

[[ -n $JAEGER_VERSION ]] || die "no github.com/jaegertracing/jaeger requirement in $JAEGER_HOME/go.mod"

# What a running Jaeger must have been started with to be kept: ports, config, UI, and a binary
# built from this go.mod, go.sum and these flags (so editing them rebuilds and restarts it).
desired_settings() {
  printf 'ports=%s\nconfig=%s\nbin=%s\nui=%s\n' "${PORTS[*]}" \
    "$(sha256sum "$JAEGER_CONFIG" | cut -d' ' -f1)" "$JAEGER_BIN" "$UI_ASSETS"
}

print_env() {
  echo "MH_OTLP_ENDPOINT=${JAEGER_OTLP_ENDPOINT}"
  echo "MH_JAEGER_QUERY_URL=${JAEGER_QUERY_URL}"
}

# ---- fast path: our Jaeger is alive, started with these settings and answering ---------------------
if pid=$(jaeger_pid) && [[ "$(cat "$JAEGER_RUNNING" 2>/dev/null)" == "$(desired_settings)" ]] && jaeger_probe; then
  log "already running: OTLP ${JAEGER_OTLP_ENDPOINT}, query ${JAEGER_QUERY_URL} (pid $pid, $(elapsed "$t0"))"
  print_env
  exit 0
fi

take_lock "${JAEGER_STATE}/up.lock"
mkdir -p "$JAEGER_LOGS" "$(dirname "$JAEGER_BIN")"

# ---- 1. the binary, built once per go.mod/go.sum/flags (in MH_CACHE, shared by every checkout) ----------
bin_changed=0
if [[ ! -x $JAEGER_BIN ]]; then
  go_bin=$(find_go "Jaeger is built from source (Go >= 1.24)")
  go_minor=$("$go_bin" env GOVERSION | sed -nE 's/^go1\.([0-9]+).*/\1/p')
  [[ -n $go_minor ]] && (( go_minor >= 24 )) || die "need Go 1.24 or newer for 'go install tool' (found $("$go_bin" env GOVERSION))"
  log "building Jaeger ${JAEGER_VERSION} with $("$go_bin" env GOVERSION) into $JAEGER_BIN (once per machine; minutes on 2 cores, log $JAEGER_LOGS/build.log)"
  build_t0=$(now_ms)
  # `go install tool` writes the binary into GOBIN; the module cache (1.3 GB, 245 MB of it
  # downloaded) is kept in MH_CACHE, so a rebuild after go.mod changes downloads little; the build
  # cache (1.6 GB) goes with the stage.
  # shellcheck disable=SC2016  # expanded by the inner shell, where build_cached sets MH_BUILD_STAGE
  build_cached jaeger "$JAEGER_BIN_KEY" "$JAEGER_LOGS/build.log" bash -c 'cd "$1" && GOBIN="$MH_BUILD_STAGE" exec "$2" install -trimpath -gcflags="$3" -ldflags="$4" tool' \
    _ "$JAEGER_HOME" "$go_bin" "$JAEGER_GCFLAGS" "$JAEGER_LDFLAGS"
  log "built $JAEGER_BIN ($(du -m "$JAEGER_BIN" | cut -f1) MB) in $(elapsed "$build_t0")"
  bin_changed=1
fi

# ---- 2. the process -------------------------------------------------------------------------------------
if pid=$(jaeger_pid) && { (( bin_changed )) || [[ "$(cat "$JAEGER_RUNNING" 2>/dev/null)" != "$(desired_settings)" ]]; }; then
  log "settings or binary changed; restarting"
  MH_JAEGER_LOCK_HELD=1 "$JAEGER_HOME/down.sh" 9>&-
fi

if ! pid=$(jaeger_pid); then
  rm -f "$JAEGER_PIDFILE" "$JAEGER_RUNNING"
  for p in "${PORTS[@]}"; do
    if port_open "$p"; then
      ss -ltnp "sport = :$p" 2>/dev/null >&2 || true
      die "port $p is taken by another process; stop it or set the MH_JAEGER_*_PORT variables"
    fi
  done
  log "starting (log $JAEGER_LOG)"
  printf '\n===== %s infra/jaeger/up.sh starting Jaeger =====\n' "$(date -Is)" >>"$JAEGER_LOG"
  # setsid + nohup: Jaeger outlives this script and is not in the caller's process group (a Ctrl-C
  # in the test runner must not stop it). All fds are redirected so that `$(infra/up.sh)` does not
  # wait for it, and 9>&- keeps it from inheriting our lock. setsid and env exec, so $! is Jaeger.
  (cd "$JAEGER_STATE" && exec nohup setsid env \
      MH_JAEGER_OTLP_HTTP_PORT="$JAEGER_OTLP_HTTP_PORT" MH_JAEGER_OTLP_GRPC_PORT="$JAEGER_OTLP_GRPC_PORT" \
      MH_JAEGER_QUERY_PORT="$JAEGER_QUERY_PORT" MH_JAEGER_QUERY_GRPC_PORT="$JAEGER_QUERY_GRPC_PORT" \
      MH_JAEGER_UI_ASSETS="$UI_ASSETS" \
      "$JAEGER_BIN" --config "file:$JAEGER_CONFIG") \
      </dev/null >>"$JAEGER_LOG" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$JAEGER_PIDFILE"
  desired_settings >"$JAEGER_RUNNING"
else
  log "already started (pid $pid); checking that it answers"
fi

# ---- 3. readiness: the query API lists services and the OTLP receivers accept -----------------------------
deadline=$(( SECONDS + START_TIMEOUT ))
until jaeger_probe; do
  if ! pid_alive "$pid"; then
    show_tail 40 "$JAEGER_LOG"
    rm -f "$JAEGER_PIDFILE" "$JAEGER_RUNNING"
    die "Jaeger exited during start-up"
  fi
  if (( SECONDS >= deadline )); then
    show_tail 40 "$JAEGER_LOG"
    log "not ready after ${START_TIMEOUT}s; stopping it"
    MH_JAEGER_LOCK_HELD=1 "$JAEGER_HOME/down.sh" 9>&- || true
    die "Jaeger did not answer on ${JAEGER_QUERY_URL} and ${JAEGER_OTLP_ENDPOINT} within ${START_TIMEOUT}s"
  fi
  sleep 0.1
done

log "ready: OTLP ${JAEGER_OTLP_ENDPOINT} (gRPC 127.0.0.1:${JAEGER_OTLP_GRPC_PORT}), query ${JAEGER_QUERY_URL} (pid $pid, $(elapsed "$t0"))"
print_env
