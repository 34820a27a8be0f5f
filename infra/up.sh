#!/usr/bin/env bash
# Starts every service the tests use (PostgreSQL, Kafka and SeaweedFS's S3 gateway, in parallel;
# then Prometheus), installing what is missing (SeaweedFS and Prometheus are built from source
# once per machine). Safe to run any number of times: quick when all is already up.
# stdout: the environment for the tests, e.g. `eval "$(infra/up.sh)"` or `infra/up.sh > .env`:
#   MH_DATABASE_URL=postgres://metaharness:metaharness@127.0.0.1:5432/metaharness
#   MH_KAFKA_BROKERS=127.0.0.1:9092
#   MH_KAFKA_SECURE_LISTENERS=<repo>/.local/kafka/secure.json
#   MH_PG_CA_FILE=<repo>/.local/postgres/tls/ca.pem
#   MH_S3_ENDPOINT=http://127.0.0.1:8333, MH_S3_ACCESS_KEY_ID=..., MH_S3_SECRET_ACCESS_KEY=...
# Progress goes to stderr.
set -euo pipefail
MH_LOG_TAG=infra
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=./lib.sh
source "$here/lib.sh"

t0=$(now_ms)
"$here/sandbox/up.sh" >/dev/null || die "sandbox/up.sh failed (bubblewrap for the sandbox broker)"
"$here/chromium/up.sh" >/dev/null || die "chromium/up.sh failed (headless Chromium for the page tests)"
# tmux gives the CLI's tests a terminal of a set width (test/integration/cli/terminal.test.ts).
command -v tmux >/dev/null 2>&1 || apt_install tmux
# openssl mints the certificates of the TLS tests and of infra/stack (tls/dev-certs.sh).
command -v openssl >/dev/null 2>&1 || apt_install openssl
pg_out=$(mktemp) kafka_out=$(mktemp) s3_out=$(mktemp)
trap 'rm -f "$pg_out" "$kafka_out" "$s3_out"' EXIT

"$here/postgres/up.sh" >"$pg_out" &
pg_pid=$!
"$here/kafka/up.sh" >"$kafka_out" &
kafka_pid=$!
# The S3-compatible store of the broker's workspace snapshots (test/integration/sandbox-broker/workspaces*).
"$here/seaweedfs/up.sh" >"$s3_out" &
s3_pid=$!

pg_rc=0 kafka_rc=0 s3_rc=0
wait "$pg_pid" || pg_rc=$?
wait "$kafka_pid" || kafka_rc=$?
wait "$s3_pid" || s3_rc=$?
(( pg_rc == 0 )) || log "postgres/up.sh failed (exit $pg_rc)"
(( kafka_rc == 0 )) || log "kafka/up.sh failed (exit $kafka_rc)"
(( s3_rc == 0 )) || log "seaweedfs/up.sh failed (exit $s3_rc)"
(( pg_rc == 0 && kafka_rc == 0 && s3_rc == 0 )) || exit 1

[[ ${MH_WITH_JAEGER:-0} != 1 ]] || "$here/jaeger/up.sh" || die "jaeger/up.sh failed (asked for by MH_WITH_JAEGER=1)"
# Prometheus (built once per machine) and promtool: the metrics test and the alert rules' checks.
prom_out=$(mktemp)
"$here/prometheus/up.sh" >"$prom_out" || { rm -f "$prom_out"; die "prometheus/up.sh failed"; }
log "all services up ($(elapsed "$t0"))"
echo "MH_DATABASE_URL=$(<"$pg_out")"
# The CA that signed the Postgres server's certificate, for the tests of TLS to Postgres.
echo "MH_PG_CA_FILE=$MH_LOCAL/postgres/tls/ca.pem"
echo "MH_KAFKA_BROKERS=$(<"$kafka_out")"
# How the tests reach the broker's TLS and SASL listeners (set up by kafka/up.sh).
echo "MH_KAFKA_SECURE_LISTENERS=$MH_LOCAL/kafka/secure.json"
# MH_PROMETHEUS_URL, MH_PROMETHEUS_BIN and MH_PROMTOOL_BIN.
cat "$prom_out"
rm -f "$prom_out"
cat "$s3_out"
