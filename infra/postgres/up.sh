#!/usr/bin/env bash
# Installs (once), creates (once), starts and checks the tests' PostgreSQL; safe to run any number
# of times. Prints the connection URL on stdout; progress goes to stderr. The server also speaks
# TLS, with a certificate from a development CA (.local/postgres/tls/ca.pem), for the tests of TLS
# to Postgres; plaintext connections stay allowed.
#
#   MH_PG_PORT          TCP port on 127.0.0.1 (default 5432)
#   MH_PG_START_TIMEOUT seconds to wait for readiness (default 60)
set -euo pipefail
MH_LOG_TAG=postgres
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

START_TIMEOUT="${MH_PG_START_TIMEOUT:-60}"
t0=$(now_ms)

[[ $PG_PORT =~ ^[0-9]+$ ]] || die "MH_PG_PORT must be a number, got '$PG_PORT'"

# The settings this script owns, included from the cluster's postgresql.conf.
desired_conf() {
  cat <<EOF
# Written by infra/postgres/up.sh on every run: change that script, not this file.
listen_addresses = '127.0.0.1'
port = ${PG_PORT}
unix_socket_directories = '${PG_SOCK}'
max_connections = 200
shared_buffers = 128MB
# A test box, but durable all the same: tests restart services and expect their data back.
fsync = on
synchronous_commit = on
timezone = 'UTC'
log_timezone = 'UTC'
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
# TLS for clients that ask (sslmode=...); certificate digest $(cert_digest), so a re-issued one restarts the server.
ssl = on
ssl_cert_file = '$(pg_tls_dir)/server.pem'
ssl_key_file = '$(pg_tls_dir)/server.key'
EOF
}

cert_digest() { cat "$(pg_tls_dir)/server.pem" "$(pg_tls_dir)/server.key" 2>/dev/null | sha256sum | cut -c1-16; }
# The certificate the server holds is the one dev-certs.sh keeps, and has 7 days left at least.
cert_current() {
  [[ -f $PG_TLS_SRC/postgres.pem ]] && openssl x509 -in "$PG_TLS_SRC/postgres.pem" -noout -checkend 604800 >/dev/null 2>&1 \
    && cmp -s "$PG_TLS_SRC/postgres.pem" "$(pg_tls_dir)/server.pem"
}

app_psql() {
  PGPASSWORD="$PG_APP_PASSWORD" PGCONNECT_TIMEOUT=3 psql -X -q -At -w \
    -h 127.0.0.1 -p "$PG_PORT" -U "$PG_APP_USER" -d "$PG_APP_DB" "$@"
}

# pid of our postmaster when it is alive and its postmaster.pid says "ready" on PG_PORT.
our_postmaster_ready() {
  local pidfile="$PG_DATA/postmaster.pid" lines
  [[ -r $pidfile ]] || return 1
  mapfile -t lines <"$pidfile" || return 1
  [[ ${#lines[@]} -ge 8 ]] || return 1
  kill -0 "${lines[0]}" 2>/dev/null || return 1
  [[ ${lines[3]} == "$PG_PORT" && ${lines[7]// /} == ready ]]
}

# ---- fast path: already up, configured as wanted and accepting our login -----------------------
if [[ -n $(pg_find_bin) ]] && pg_load_paths && [[ -f $PG_DATA/PG_VERSION ]] \
  && cert_current && [[ "$(cat "$PG_DATA/metaharness.conf" 2>/dev/null)" == "$(desired_conf)" ]] \
  && our_postmaster_ready && app_psql -c 'select 1' >/dev/null 2>&1; then
  log "already running on 127.0.0.1:${PG_PORT} ($(elapsed "$t0"))"
  echo "$PG_URL"
  exit 0
fi

take_lock "${PG_STATE}/up.lock"

# ---- 1. server binaries ------------------------------------------------------------------------
PG_BIN=$(pg_find_bin)
if [[ -z $PG_BIN ]]; then
  log "PostgreSQL server not installed"
  # Debian's postinst would create and start a `main` cluster on 5432, which would then hold the
  # port we want. Ask it not to (only when we are the ones installing the server).
  as_root mkdir -p /etc/postgresql-common/createcluster.d
  printf '# Written by metaharness infra/postgres/up.sh: tests run their own cluster.\ncreate_main_cluster = false\n' \
    | as_root tee /etc/postgresql-common/createcluster.d/metaharness.conf >/dev/null
  apt_install postgresql
  PG_BIN=$(pg_find_bin)
  [[ -n $PG_BIN ]] || die "postgresql installed but no /usr/lib/postgresql/*/bin/postgres found"
fi
command -v psql >/dev/null || die "psql not found on PATH (apt-get install postgresql-client)"
command -v pg_isready >/dev/null || die "pg_isready not found on PATH (apt-get install postgresql-client)"

# ---- 2. data folder ----------------------------------------------------------------------------
if ! pg_load_paths; then
  base="$PG_STATE"
  mkdir -p "$base/data"
  if [[ $EUID -eq 0 ]]; then
    chown "$PG_OS_USER:" "$base/data"
    if ! runuser -u "$PG_OS_USER" -- test -w "$base/data"; then
      # e.g. a checkout under /root (mode 700): the postgres user cannot reach .local there.
      rmdir "$base/data" 2>/dev/null || true
      base="/var/lib/postgresql/metaharness/$(printf '%s' "$MH_ROOT" | sha256sum | cut -c1-12)"
      log "WARNING: user $PG_OS_USER cannot reach $PG_STATE; keeping the cluster in $base instead"
    fi
  fi
  printf '%s\n' "$base/data" >"$PG_DATADIR_FILE"
  pg_load_paths
fi
pgbase=$(dirname "$PG_DATA")
mkdir -p "$PG_DATA" "$pgbase/log" "$pgbase/run"
chmod 700 "$PG_DATA"
if [[ $EUID -eq 0 ]]; then chown "$PG_OS_USER:" "$PG_DATA" "$pgbase/log" "$pgbase/run"; fi
[[ $PG_SOCK == /tmp ]] || chmod 700 "$PG_SOCK"

# ---- 2b. the server's certificate ------------------------------------------------------------------
command -v openssl >/dev/null || apt_install openssl
"$MH_ROOT/infra/tls/dev-certs.sh" "$PG_TLS_SRC" postgres 9>&-
# The CA's key stays with whoever runs this script (an earlier version handed it to the server's user).
if [[ $EUID -eq 0 ]]; then chown -R 0:0 "$PG_TLS_SRC"; fi
tls_dir=$(pg_tls_dir)
if ! cert_current; then
  mkdir -p "$tls_dir"
  chmod 700 "$tls_dir"
  install -m 600 "$PG_TLS_SRC/postgres.key" "$tls_dir/server.key"
  install -m 644 "$PG_TLS_SRC/postgres.pem" "$tls_dir/server.pem"
  if [[ $EUID -eq 0 ]]; then chown -R "$PG_OS_USER:" "$tls_dir"; fi
fi

# ---- 3. cluster ----------------------------------------------------------------------------------
if [[ ! -f $PG_DATA/PG_VERSION ]]; then
  log "initdb $PG_DATA ($("$PG_BIN/postgres" --version))"
  locale_opt=(--no-locale)
  if locale -a 2>/dev/null | grep -ixE 'c\.utf-?8' >/dev/null; then locale_opt=(--locale=C.UTF-8); fi
  [[ -z $(ls -A "$PG_DATA") ]] || die "$PG_DATA is not empty but has no PG_VERSION; remove it"
  as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U "$PG_OS_USER" --encoding=UTF8 "${locale_opt[@]}" \
    --auth-local=peer --auth-host=scram-sha-256 --no-sync >"$pgbase/log/initdb.log" 2>&1 \
    || { show_tail 30 "$pgbase/log/initdb.log"; die "initdb failed"; }
fi
if ! grep -qx "include_if_exists = 'metaharness.conf'" "$PG_DATA/postgresql.conf"; then
  printf "\n# Settings of the metaharness tests (infra/postgres/up.sh)\ninclude_if_exists = 'metaharness.conf'\n" \
    | as_pg tee -a "$PG_DATA/postgresql.conf" >/dev/null
fi
conf_changed=0
if [[ "$(cat "$PG_DATA/metaharness.conf" 2>/dev/null)" != "$(desired_conf)" ]]; then
  desired_conf | as_pg tee "$PG_DATA/metaharness.conf" >/dev/null
  conf_changed=1
fi

# ---- 4. server ----------------------------------------------------------------------------------
pg_running() { as_pg "$PG_BIN/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1; }

if pg_running && (( conf_changed )); then
  log "settings changed; stopping to apply them"
  as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DATA" -m fast -w -t 60 >/dev/null 9>&- \
    || die "could not stop the running server"
fi
if ! pg_running; then
  if port_open "$PG_PORT"; then
    ss -ltnp "sport = :$PG_PORT" >&2 2>/dev/null || true
    die "port $PG_PORT is taken by another process (Debian's cluster? see pg_lsclusters); stop it or set MH_PG_PORT"
  fi
  log "starting (data $PG_DATA, log $PG_LOG)"
  # setsid: the server must not share the caller's process group, or a Ctrl-C in the test
  # runner (which signals that group) would shut it down. 9>&-: do not inherit our lock.
  as_pg setsid "$PG_BIN/pg_ctl" start -D "$PG_DATA" -l "$PG_LOG" -W >/dev/null 9>&- \
    || { show_tail 30 "$PG_LOG"; die "pg_ctl start failed"; }
fi

# ---- 5. readiness: poll pg_isready ---------------------------------------------------------------
deadline=$(( SECONDS + START_TIMEOUT ))
until pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -t 2; do
  if (( SECONDS >= deadline )); then
    show_tail 40 "$PG_LOG"
    die "not ready on 127.0.0.1:$PG_PORT after ${START_TIMEOUT}s"
  fi
  if ! pg_running && [[ ! -f $PG_DATA/postmaster.pid ]]; then
    sleep 0.3   # pg_ctl may not have written the pid file yet
    if ! pg_running && [[ ! -f $PG_DATA/postmaster.pid ]]; then
      show_tail 40 "$PG_LOG"
      die "the server exited during start-up"
    fi
  fi
  sleep 0.2
done

# ---- 6. role and database ------------------------------------------------------------------------
if ! app_psql -c 'select 1' >/dev/null 2>&1; then
  log "creating role and database $PG_APP_DB"
  as_pg psql -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U "$PG_OS_USER" -d postgres >/dev/null <<SQL
SELECT 'CREATE ROLE ${PG_APP_USER}'
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${PG_APP_USER}')\gexec
ALTER ROLE ${PG_APP_USER} WITH LOGIN SUPERUSER PASSWORD '${PG_APP_PASSWORD}';
SELECT 'CREATE DATABASE ${PG_APP_DB} OWNER ${PG_APP_USER}'
 WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '${PG_APP_DB}')\gexec
SQL
  app_psql -c 'select 1' >/dev/null || die "cannot log in as $PG_APP_USER over TCP"
fi

log "ready on 127.0.0.1:${PG_PORT} ($(elapsed "$t0"))"
echo "$PG_URL"
