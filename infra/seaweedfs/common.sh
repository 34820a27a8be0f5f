# shellcheck shell=bash disable=SC2034  # variables here are used by the scripts that source this file
# Settings shared by the infra/seaweedfs scripts. Source it after ../lib.sh.
#
# One SeaweedFS `weed server -s3` process (master, volume, filer and the S3 gateway in one), the
# S3-compatible object store of the sandbox broker's workspace store (MH_WORKSPACE_STORE=s3://...).
# Built from the Go module proxy through the wrapper module in this folder (see go.mod there for
# why), kept in MH_CACHE keyed by go.mod, go.sum and the flags (build_cached in ../lib.sh); data,
# logs and the pid file are in <repo>/.local/seaweedfs. Apache-2.0 (MinIO's server is AGPL).

# Each port has a gRPC twin at port + 10000, which must be free too; all below the ephemeral range.
SEAWEEDFS_S3_PORT="${MH_SEAWEEDFS_S3_PORT:-8333}"
SEAWEEDFS_MASTER_PORT="${MH_SEAWEEDFS_MASTER_PORT:-9333}"
SEAWEEDFS_VOLUME_PORT="${MH_SEAWEEDFS_VOLUME_PORT:-8380}"
SEAWEEDFS_FILER_PORT="${MH_SEAWEEDFS_FILER_PORT:-8888}"
SEAWEEDFS_ENDPOINT="http://127.0.0.1:${SEAWEEDFS_S3_PORT}"

SEAWEEDFS_HOME="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SEAWEEDFS_STATE="${MH_SEAWEEDFS_STATE:-${MH_LOCAL}/seaweedfs}"
SEAWEEDFS_DATA="${SEAWEEDFS_STATE}/data"
SEAWEEDFS_LOGS="${SEAWEEDFS_STATE}/logs"
SEAWEEDFS_LOG="${SEAWEEDFS_LOGS}/weed.log"
SEAWEEDFS_PIDFILE="${SEAWEEDFS_STATE}/weed.pid"
SEAWEEDFS_CONFIG="${SEAWEEDFS_STATE}/s3.json"
# What the running process was started with (ports and binary); see up.sh.
SEAWEEDFS_RUNNING="${SEAWEEDFS_STATE}/running"

SEAWEEDFS_VERSION=$(sed -nE 's/^[[:space:]]*(require[[:space:]]+)?github\.com\/seaweedfs\/seaweedfs (v[^ ]+).*/\2/p' "$SEAWEEDFS_HOME/go.mod" | head -n1)
SEAWEEDFS_LDFLAGS="-s -w"
# Without optimizations or inlining, as Jaeger (../jaeger/common.sh): it stores the tests' few
# megabytes, and the build is the longest step of a cold test run.
SEAWEEDFS_GCFLAGS="all=-N -l"

seaweedfs_bin_stamp() {
  { cat "$SEAWEEDFS_HOME/go.mod" "$SEAWEEDFS_HOME/go.sum"; echo "$SEAWEEDFS_LDFLAGS $SEAWEEDFS_GCFLAGS"; } | sha256sum | cut -c1-16
}
SEAWEEDFS_BIN_KEY="${SEAWEEDFS_VERSION}-$(seaweedfs_bin_stamp)"
SEAWEEDFS_BIN="$(cached_bin weed "$SEAWEEDFS_BIN_KEY")"

# Prints the pid of this checkout's weed when it is alive (a weed binary started with this
# state folder, so a pid reused by another process is not mistaken for it); returns 1 otherwise.
seaweedfs_pid() {
  local pid
  [[ -s $SEAWEEDFS_PIDFILE ]] || return 1
  pid=$(<"$SEAWEEDFS_PIDFILE")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  pid_alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F -- "-dir=$SEAWEEDFS_DATA " >/dev/null || return 1
  echo "$pid"
}

# True when the S3 gateway on 127.0.0.1:$1 answers an anonymous ListBuckets as S3 does (200, or
# 403 where the version denies anonymous callers): the filer and the gateway are up.
seaweedfs_probe() {
  local reply
  reply=$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3
    head -c 1024 <&3
  ' _ "$1" 2>/dev/null) || return 1
  [[ $reply =~ ^HTTP/1\.[01]\ (200|403) ]]
}
