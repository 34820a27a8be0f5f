# shellcheck shell=bash disable=SC2034  # variables here are used by the scripts that source this file
# Settings shared by infra/postgres/up.sh and down.sh. Source it after ../lib.sh.
#
# The tests' PostgreSQL is a cluster of its own (not Debian's `15 main`): its data, log and socket
# live under <repo>/.local/postgres, it is run by Debian's server binaries through pg_ctl, and it
# listens on 127.0.0.1 only. Every checkout therefore has its own cluster and nothing is
# registered under /etc/postgresql (a fresh clone in another folder, as CI makes, starts clean).

PG_PORT="${MH_PG_PORT:-5432}"
PG_APP_USER=metaharness
PG_APP_PASSWORD=metaharness
PG_APP_DB=metaharness
PG_URL="postgres://${PG_APP_USER}:${PG_APP_PASSWORD}@127.0.0.1:${PG_PORT}/${PG_APP_DB}"

PG_STATE="${MH_LOCAL}/postgres"
# The development CA and the server's certificate (tls/dev-certs.sh); clients check the server
# against ca.pem here (sslmode=verify-full). The server reads its own copy (pg_tls_dir).
PG_TLS_SRC="${PG_STATE}/tls"
# The data folder actually used is recorded here (see pg_choose_datadir).
PG_DATADIR_FILE="${PG_STATE}/datadir"

# The newest installed server, e.g. /usr/lib/postgresql/15/bin; empty when there is none.
pg_find_bin() {
  local p
  p=$(ls -d /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sort -V | tail -n 1 || true)
  [[ -n $p ]] && dirname "$p"
  return 0
}

# The operating-system user that runs the server: `postgres` when we are root (PostgreSQL refuses
# to run as root), otherwise ourselves.
if [[ $EUID -eq 0 ]]; then PG_OS_USER=postgres; else PG_OS_USER=$(id -un); fi

# Runs a command as PG_OS_USER, from / so that an unreadable working directory does not matter.
as_pg() {
  if [[ $EUID -eq 0 ]]; then
    (cd / && runuser -u "$PG_OS_USER" -- "$@")
  else
    (cd / && "$@")
  fi
}

# Sets PG_DATA, PG_LOG and PG_SOCK from the recorded data folder; returns 1 if none is recorded.
pg_load_paths() {
  [[ -s $PG_DATADIR_FILE ]] || return 1
  PG_DATA=$(<"$PG_DATADIR_FILE")
  PG_LOG="$(dirname "$PG_DATA")/log/postgresql.log"
  # Unix socket paths are limited to ~107 bytes; deep checkouts fall back to /tmp.
  PG_SOCK="$(dirname "$PG_DATA")/run"
  if (( ${#PG_SOCK} + 20 > 100 )); then PG_SOCK=/tmp; fi
  return 0
}

# The server's copy of its certificate and key, owned by PG_OS_USER (PostgreSQL refuses a key
# that others can read). Needs pg_load_paths.
pg_tls_dir() { echo "$(dirname "$PG_DATA")/server-tls"; }
