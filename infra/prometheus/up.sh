#!/usr/bin/env bash
# Builds (once), starts and checks a Prometheus for the tests and for trying the dashboards: it
# scrapes itself, takes OTLP metrics, and evaluates rules/metaharness.yml. Safe to run any number
# of times, and quick when it already answers. The first run on a machine builds `prometheus` and
# `promtool` from the Go module proxy (`go install ...@v0.316.0`; 7 to 20 minutes on 2 cores,
# 147 MB) into MH_CACHE (default ~/.cache/metaharness), outside the checkout; later runs, fresh
# clones included, reuse them. Data lives in .local/prometheus and is kept 1 day.
# stdout: the environment for the tests; progress to stderr.
#   MH_PROMETHEUS_URL=http://127.0.0.1:9090
#   MH_PROMETHEUS_BIN=<MH_CACHE>/prometheus/v0.316.0/prometheus
#   MH_PROMTOOL_BIN=<MH_CACHE>/promtool/v0.316.0/promtool
#
#   MH_PROMETHEUS_PORT           HTTP API, UI and OTLP receiver on 127.0.0.1 (default 9090)
#   MH_PROMETHEUS_START_TIMEOUT  seconds to wait for readiness (default 30)
set -euo pipefail
MH_LOG_TAG=prometheus
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PROMETHEUS_VERSION=v0.316.0
HERE="$MH_ROOT/infra/prometheus"
STATE="$MH_LOCAL/prometheus"
PORT="${MH_PROMETHEUS_PORT:-9090}"
START_TIMEOUT="${MH_PROMETHEUS_START_TIMEOUT:-30}"
PIDFILE="$STATE/prometheus.pid"
RUNNING="$STATE/running"
LOG="$STATE/prometheus.log"
URL="http://127.0.0.1:${PORT}"
t0=$(now_ms)
[[ $PORT =~ ^[0-9]+$ ]] || die "MH_PROMETHEUS_PORT must be a number, got '$PORT'"

PROM_BIN=$(cached_bin prometheus "$PROMETHEUS_VERSION")
TOOL_BIN=$(cached_bin promtool "$PROMETHEUS_VERSION")

print_env() {
  echo "MH_PROMETHEUS_URL=$URL"
  echo "MH_PROMETHEUS_BIN=$PROM_BIN"
  echo "MH_PROMTOOL_BIN=$TOOL_BIN"
}
# What a running Prometheus must have been started with to be kept.
desired_settings() { printf 'port=%s\nbin=%s\nconfig=%s\n' "$PORT" "$PROM_BIN" "$(cat "$HERE/prometheus.yml" "$HERE"/rules/*.yml | sha256sum | cut -d' ' -f1)"; }
probe() { curl -fsS -m 2 "$URL/-/ready" >/dev/null 2>&1; }
running_pid() { local pid; pid=$(cat "$PIDFILE" 2>/dev/null) && pid_alive "$pid" && echo "$pid"; }

if pid=$(running_pid) && [[ "$(cat "$RUNNING" 2>/dev/null)" == "$(desired_settings)" ]] && probe; then
  log "already running: $URL (pid $pid, $(elapsed "$t0"))"
  print_env
  exit 0
fi

take_lock "$STATE/up.lock"
for name in prometheus promtool; do
  bin=$(cached_bin "$name" "$PROMETHEUS_VERSION")
  [[ -x $bin ]] && continue
  go_bin=$(find_go "Prometheus is built from source")
  log "building $name $PROMETHEUS_VERSION into $bin (once per machine; minutes on 2 cores, log $STATE/build-$name.log)"
  build_t0=$(now_ms)
  # shellcheck disable=SC2016  # expanded by the inner shell, where build_cached sets MH_BUILD_STAGE
  build_cached "$name" "$PROMETHEUS_VERSION" "$STATE/build-$name.log" bash -c 'GOBIN="$MH_BUILD_STAGE" exec "$1" install -trimpath -ldflags="-s -w" "github.com/prometheus/prometheus/cmd/$2@$3"' \
    _ "$go_bin" "$name" "$PROMETHEUS_VERSION"
  log "built $name ($(du -m "$bin" | cut -f1) MB) in $(elapsed "$build_t0")"
done

if pid=$(running_pid); then
  log "settings changed; restarting (pid $pid)"
  stop_pid "$pid" 30
fi
rm -f "$PIDFILE" "$RUNNING"
if port_open "$PORT"; then
  die "port $PORT is taken by another process; stop it or set MH_PROMETHEUS_PORT"
fi
"$TOOL_BIN" check config "$HERE/prometheus.yml" >&2 || die "prometheus.yml does not check"
mkdir -p "$STATE/data"
# The config names the scrape of itself on 9090: written with the port in use.
sed "s/127.0.0.1:9090/127.0.0.1:${PORT}/" "$HERE/prometheus.yml" >"$STATE/prometheus.yml"
rm -rf "$STATE/rules" && cp -r "$HERE/rules" "$STATE/rules"
log "starting (log $LOG)"
# setsid + nohup, all fds redirected, 9>&-: as infra/jaeger/up.sh, it outlives this script.
(cd "$STATE" && exec nohup setsid "$PROM_BIN" --config.file="$STATE/prometheus.yml" --storage.tsdb.path="$STATE/data" \
    --storage.tsdb.retention.time=1d --web.listen-address="127.0.0.1:${PORT}" --web.enable-otlp-receiver) \
    </dev/null >>"$LOG" 2>&1 9>&- &
pid=$!
echo "$pid" >"$PIDFILE"
desired_settings >"$RUNNING"

deadline=$(( SECONDS + START_TIMEOUT ))
until probe; do
  if ! pid_alive "$pid"; then show_tail 40 "$LOG"; rm -f "$PIDFILE" "$RUNNING"; die "Prometheus exited during start-up"; fi
  if (( SECONDS >= deadline )); then show_tail 40 "$LOG"; stop_pid "$pid" 10; die "Prometheus did not answer on $URL within ${START_TIMEOUT}s"; fi
  sleep 0.1
done
log "ready: $URL (pid $pid, $(elapsed "$t0"))"
print_env
