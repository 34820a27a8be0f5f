# shellcheck shell=bash disable=SC2034  # variables here are used by the scripts that source this file
# Settings shared by the infra/jaeger scripts. Source it after ../lib.sh.
#
# One Jaeger v2 process (OTLP receiver, in-memory storage, query API and UI), built from the Go
# module proxy with `go install tool` in infra/jaeger (see go.mod there for why not `go install
# <pkg>@<version>`). The binary is kept in MH_CACHE (outside the checkout, keyed by what it is built
# from; see build_cached in ../lib.sh), so a fresh clone reuses it; logs and the pid file are in
# <repo>/.local/jaeger.

JAEGER_OTLP_HTTP_PORT="${MH_JAEGER_OTLP_HTTP_PORT:-4318}"
JAEGER_OTLP_GRPC_PORT="${MH_JAEGER_OTLP_GRPC_PORT:-4317}"
JAEGER_QUERY_PORT="${MH_JAEGER_QUERY_PORT:-16686}"
JAEGER_QUERY_GRPC_PORT="${MH_JAEGER_QUERY_GRPC_PORT:-16685}"
JAEGER_OTLP_ENDPOINT="http://127.0.0.1:${JAEGER_OTLP_HTTP_PORT}"
JAEGER_QUERY_URL="http://127.0.0.1:${JAEGER_QUERY_PORT}"

JAEGER_HOME="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAEGER_CONFIG="${JAEGER_HOME}/config.yaml"
JAEGER_STATE="${MH_LOCAL}/jaeger"
JAEGER_LOGS="${JAEGER_STATE}/logs"
JAEGER_LOG="${JAEGER_LOGS}/jaeger.log"
JAEGER_PIDFILE="${JAEGER_STATE}/jaeger.pid"
# What the running process was started with (ports, config and binary checksums); see up.sh.
JAEGER_RUNNING="${JAEGER_STATE}/running"

# The Jaeger module version from go.mod, recorded in the binary (`jaeger version`).
JAEGER_VERSION=$(sed -nE 's/^[[:space:]]*github\.com\/jaegertracing\/jaeger (v[^ ]+).*/\1/p' "$JAEGER_HOME/go.mod")
JAEGER_LDFLAGS="-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=${JAEGER_VERSION}"
# Compiled without optimizations or inlining: this Jaeger holds the spans of tests and of one
# developer's machine, and the build is the longest step of a cold test run. Measured on 2 cores
# from a warm module cache: 664 CPU-seconds (358 s) against 954 with the compiler's defaults.
JAEGER_GCFLAGS="all=-N -l"

# Checksum of go.mod, go.sum and the flags the binary is built from: editing them rebuilds it.
jaeger_bin_stamp() {
  { cat "$JAEGER_HOME/go.mod" "$JAEGER_HOME/go.sum"; echo "$JAEGER_LDFLAGS $JAEGER_GCFLAGS"; } | sha256sum | cut -c1-16
}
JAEGER_BIN_KEY="${JAEGER_VERSION}-$(jaeger_bin_stamp)"
JAEGER_BIN="$(cached_bin jaeger "$JAEGER_BIN_KEY")"


# Prints the pid of this checkout's Jaeger when it is alive; returns 1 otherwise. The command line
# is checked too, so that a pid reused by another process after a reboot is not mistaken for it:
# a jaeger binary started with this checkout's config (whichever build it was, so that down.sh
# still finds one started before go.mod changed).
jaeger_pid() {
  local pid
  [[ -s $JAEGER_PIDFILE ]] || return 1
  pid=$(<"$JAEGER_PIDFILE")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  pid_alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F "/jaeger --config file:$JAEGER_CONFIG" >/dev/null || return 1
  echo "$pid"
}

# One HTTP/1.0 request from bash to 127.0.0.1:$1 (method $2, path $3, optional JSON body $4);
# prints the status line and headers and up to 4 KB of the answer. HTTP/1.0: the server closes the
# connection after answering, so reading to the end is reading one answer.
http_call() {
  local port=$1 method=$2 path=$3 body=${4:-}
  timeout 3 bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    if [[ -n $4 ]]; then
      printf "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" "$2" "$3" "${#4}" "$4" >&3
    else
      printf "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "$2" "$3" >&3
    fi
    head -c 4096 <&3
  ' _ "$port" "$method" "$path" "$body" 2>/dev/null
}

# True when the query API lists services (`{"data":[...]...}`) on 127.0.0.1:$1.
jaeger_query_probe() {
  local reply
  reply=$(http_call "$1" GET /api/services) || return 1
  [[ $reply == "HTTP/1."[01]" 200"* && $reply == *'"data":'* ]]
}

# True when the OTLP/HTTP receiver on 127.0.0.1:$1 accepts an (empty) export request. Receivers
# start after the extensions, so the query API answering does not mean OTLP is ready yet.
jaeger_otlp_probe() {
  local reply
  reply=$(http_call "$1" POST /v1/traces '{"resourceSpans":[]}') || return 1
  [[ $reply == "HTTP/1."[01]" 200"* ]]
}

# Both of the above, plus the OTLP/gRPC port accepting connections.
jaeger_probe() {
  jaeger_query_probe "$JAEGER_QUERY_PORT" && jaeger_otlp_probe "$JAEGER_OTLP_HTTP_PORT" \
    && port_open "$JAEGER_OTLP_GRPC_PORT"
}
