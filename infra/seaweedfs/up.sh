#!/usr/bin/env bash
# Builds (once), starts and checks the tests' SeaweedFS S3 gateway (`weed server -s3`, data in
# .local/seaweedfs/data, one identity whose keys are made once and kept in .local/seaweedfs/s3.json). Safe to run any number of times, and quick when it
# already answers. The first run on a machine builds `weed` from the Go module proxy (the wrapper
# module in this folder; about 6 minutes and 233 MB on 2 cores) into MH_CACHE (default
# ~/.cache/metaharness), outside the checkout; later runs, fresh clones included, reuse it.
# stdout: the environment for the tests; progress to stderr.
#   MH_S3_ENDPOINT=http://127.0.0.1:8333
#   MH_S3_ACCESS_KEY_ID=mh...          (signed requests: a gateway without identities refuses them)
#   MH_S3_SECRET_ACCESS_KEY=...
#
#   MH_SEAWEEDFS_S3_PORT      S3 gateway on 127.0.0.1 (default 8333)
#   MH_SEAWEEDFS_MASTER_PORT  master (default 9333)
#   MH_SEAWEEDFS_VOLUME_PORT  volume server (default 8380)
#   MH_SEAWEEDFS_FILER_PORT   filer (default 8888)
#     each also listens on its port + 10000 (gRPC)
#   MH_SEAWEEDFS_STATE        data, logs and pid file (default <repo>/.local/seaweedfs)
#   MH_SEAWEEDFS_START_TIMEOUT seconds to wait for readiness (default 90)
set -euo pipefail
MH_LOG_TAG=seaweedfs
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

START_TIMEOUT="${MH_SEAWEEDFS_START_TIMEOUT:-90}"
PORTS=("$SEAWEEDFS_S3_PORT" "$SEAWEEDFS_MASTER_PORT" "$SEAWEEDFS_VOLUME_PORT" "$SEAWEEDFS_FILER_PORT")
t0=$(now_ms)

for p in "${PORTS[@]}"; do
  [[ $p =~ ^[0-9]+$ ]] && (( p > 0 && p < 55536 )) || die "MH_SEAWEEDFS_*_PORT must be numbers below 55536 (each has a gRPC twin at + 10000), got '$p'"
done
[[ $(printf '%s\n' "${PORTS[@]}" | sort -u | wc -l) == "${#PORTS[@]}" ]] || die "the four MH_SEAWEEDFS_*_PORT must differ"
[[ -n $SEAWEEDFS_VERSION ]] || die "no github.com/seaweedfs/seaweedfs requirement in $SEAWEEDFS_HOME/go.mod"

desired_settings() { printf 'ports=%s\nbin=%s\nconfig=%s\n' "${PORTS[*]}" "$SEAWEEDFS_BIN" "$(sha256sum "$SEAWEEDFS_CONFIG" 2>/dev/null | cut -c1-16)"; }
print_env() {
  echo "MH_S3_ENDPOINT=${SEAWEEDFS_ENDPOINT}"
  echo "MH_S3_ACCESS_KEY_ID=$(sed -nE 's/.*"accessKey": *"([^"]+)".*/\1/p' "$SEAWEEDFS_CONFIG")"
  echo "MH_S3_SECRET_ACCESS_KEY=$(sed -nE 's/.*"secretKey": *"([^"]+)".*/\1/p' "$SEAWEEDFS_CONFIG")"
}

# ---- fast path: ours is alive, started with these settings and answering ---------------------------
if pid=$(seaweedfs_pid) && [[ "$(cat "$SEAWEEDFS_RUNNING" 2>/dev/null)" == "$(desired_settings)" ]] && seaweedfs_probe "$SEAWEEDFS_S3_PORT"; then
  log "already running: S3 ${SEAWEEDFS_ENDPOINT} (pid $pid, $(elapsed "$t0"))"
  print_env
  exit 0
fi

take_lock "${SEAWEEDFS_STATE}/up.lock"
mkdir -p "$SEAWEEDFS_LOGS" "$SEAWEEDFS_DATA"
# The gateway's one identity, made once (a local test store on 127.0.0.1: the keys only keep the
# requests signed, as a real store's are).
if [[ ! -s $SEAWEEDFS_CONFIG ]]; then
  umask 077
  printf '{\n  "identities": [\n    {\n      "name": "metaharness",\n      "credentials": [{ "accessKey": "%s", "secretKey": "%s" }],\n      "actions": ["Admin", "Read", "Write", "List", "Tagging"]\n    }\n  ]\n}\n' \
    "mh$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" >"$SEAWEEDFS_CONFIG.tmp"
  mv "$SEAWEEDFS_CONFIG.tmp" "$SEAWEEDFS_CONFIG"
  umask 022
fi

# ---- 1. the binary, built once per go.mod/go.sum/flags (in MH_CACHE, shared by every checkout) ----------
bin_changed=0
if [[ ! -x $SEAWEEDFS_BIN ]]; then
  go_bin=$(find_go "SeaweedFS is built from source (Go >= 1.24)")
  log "building SeaweedFS ${SEAWEEDFS_VERSION} with $("$go_bin" env GOVERSION) into $SEAWEEDFS_BIN (once per machine; minutes on 2 cores, log $SEAWEEDFS_LOGS/build.log)"
  build_t0=$(now_ms)
  # shellcheck disable=SC2016  # expanded by the inner shell, where build_cached sets MH_BUILD_STAGE
  build_cached weed "$SEAWEEDFS_BIN_KEY" "$SEAWEEDFS_LOGS/build.log" bash -c 'cd "$1" && exec "$2" build -trimpath -gcflags="$3" -ldflags="$4" -o "$MH_BUILD_STAGE/weed" github.com/seaweedfs/seaweedfs/weed' \
    _ "$SEAWEEDFS_HOME" "$go_bin" "$SEAWEEDFS_GCFLAGS" "$SEAWEEDFS_LDFLAGS"
  log "built $SEAWEEDFS_BIN ($(du -m "$SEAWEEDFS_BIN" | cut -f1) MB) in $(elapsed "$build_t0")"
  bin_changed=1
fi

# ---- 2. the process -------------------------------------------------------------------------------------
if pid=$(seaweedfs_pid) && { (( bin_changed )) || [[ "$(cat "$SEAWEEDFS_RUNNING" 2>/dev/null)" != "$(desired_settings)" ]]; }; then
  log "settings or binary changed; restarting"
  MH_SEAWEEDFS_LOCK_HELD=1 "$SEAWEEDFS_HOME/down.sh" 9>&-
fi

if ! pid=$(seaweedfs_pid); then
  rm -f "$SEAWEEDFS_PIDFILE" "$SEAWEEDFS_RUNNING"
  for p in "${PORTS[@]}"; do
    for q in "$p" $(( p + 10000 )); do
      if port_open "$q"; then
        ss -ltnp "sport = :$q" 2>/dev/null >&2 || true
        die "port $q is taken by another process; stop it or set the MH_SEAWEEDFS_*_PORT variables"
      fi
    done
  done
  log "starting (log $SEAWEEDFS_LOG)"
  printf '\n===== %s infra/seaweedfs/up.sh starting weed =====\n' "$(date -Is)" >>"$SEAWEEDFS_LOG"
  # As Jaeger's: detached from the caller's session and fds (so `$(infra/up.sh)` returns), without
  # our lock. The Iceberg and Lance endpoints are off (they would take 8181 and 9101).
  (cd "$SEAWEEDFS_STATE" && exec nohup setsid "$SEAWEEDFS_BIN" server -s3 -ip=127.0.0.1 -ip.bind=127.0.0.1 \
      -dir="$SEAWEEDFS_DATA" -master.port="$SEAWEEDFS_MASTER_PORT" -volume.port="$SEAWEEDFS_VOLUME_PORT" \
      -filer.port="$SEAWEEDFS_FILER_PORT" -s3.port="$SEAWEEDFS_S3_PORT" -s3.port.iceberg=0 -s3.port.lance=0 -s3.config="$SEAWEEDFS_CONFIG" \
      -master.volumeSizeLimitMB=64 -volume.max=0) \
      </dev/null >>"$SEAWEEDFS_LOG" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$SEAWEEDFS_PIDFILE"
  desired_settings >"$SEAWEEDFS_RUNNING"
else
  log "already started (pid $pid); checking that it answers"
fi

# ---- 3. readiness: the S3 gateway lists buckets -------------------------------------------------------------
deadline=$(( SECONDS + START_TIMEOUT ))
until seaweedfs_probe "$SEAWEEDFS_S3_PORT"; do
  if ! pid_alive "$pid"; then
    show_tail 40 "$SEAWEEDFS_LOG"
    rm -f "$SEAWEEDFS_PIDFILE" "$SEAWEEDFS_RUNNING"
    die "weed exited during start-up"
  fi
  if (( SECONDS >= deadline )); then
    show_tail 40 "$SEAWEEDFS_LOG"
    log "not ready after ${START_TIMEOUT}s; stopping it"
    MH_SEAWEEDFS_LOCK_HELD=1 "$SEAWEEDFS_HOME/down.sh" 9>&- || true
    die "SeaweedFS did not answer on ${SEAWEEDFS_ENDPOINT} within ${START_TIMEOUT}s"
  fi
  sleep 0.2
done

log "ready: S3 ${SEAWEEDFS_ENDPOINT} (pid $pid, $(elapsed "$t0"))"
print_env
