#!/usr/bin/env bash
# Starts Meta-Harness distributed on this machine: every service as its own process, against the
# real PostgreSQL and Kafka (from infra/up.sh, or MH_DATABASE_URL / MH_KAFKA_BROKERS as given):
# session-log, credential-vault-proxy, sandbox-broker, the offline model (unless ANTHROPIC_API_KEY
# is set), MH_STACK_HARNESSES harness instances (2 by default) and the gateway. The same
# processes, settings and secrets files a deployment has; only the addresses are all 127.0.0.1.
# Run `npx turbo run build` first.
#
# stdout: MH_URL=http://127.0.0.1:8080 and MH_API_KEY=... (what `mh sessions` and the SDK need),
#   e.g. `set -a; eval "$(infra/stack/up.sh)"; set +a`.
# State (secrets 0600, pid files, one log per process) in $MH_STACK_DIR (.local/stack).
# Ports: gRPC from MH_STACK_PORT_BASE (15050): session-log +1, sandbox-broker +3,
#   credential-vault-proxy +4 (its remote HTTP endpoint +5), harnesses +10, +11, ...;
#   gateway MH_STACK_HTTP_PORT (8080); offline model MH_STACK_MODEL_PORT (8790).
# Not idempotent on purpose: a running stack in the same directory is refused; infra/stack/down.sh first.
set -euo pipefail
MH_LOG_TAG=stack
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"
# shellcheck source=./common.sh
source "$here/common.sh"

t0=$(now_ms)
for app in session-log credential-vault-proxy sandbox-broker harness gateway; do
  [[ -f "$MH_ROOT/apps/$app/dist/main.js" ]] || die "apps/$app is not built: run npx turbo run build"
done
[[ -f "$MH_ROOT/packages/offline-model/dist/main.js" ]] || die "packages/offline-model is not built: run npx turbo run build"
for f in "$STACK_DIR"/pids/*.pid; do
  [[ -e $f ]] || continue
  if pid_alive "$(<"$f")"; then die "a stack is already running from $STACK_DIR ($(basename "$f" .pid)); infra/stack/down.sh first"; fi
done
rm -rf "$STACK_DIR/pids"
mkdir -p "$STACK_DIR/pids" "$STACK_DIR/logs" "$STACK_DIR/secrets"
chmod 700 "$STACK_DIR/secrets"

if [[ -z ${MH_DATABASE_URL:-} || -z ${MH_KAFKA_BROKERS:-} ]]; then
  services_env=$("$MH_ROOT/infra/up.sh") || die "infra/up.sh failed"
  eval "$services_env"
fi
export MH_DATABASE_URL MH_KAFKA_BROKERS

# Secrets are files, never settings (infra/secrets.sh). The master key is kept across restarts
# (the vaults in Postgres stay readable); the service tokens, the certificates and the API key are
# new at each start. Between the services the stack speaks mutual TLS (MH_STACK_TLS=off for
# plaintext): each serves with its own certificate and asks callers for one from the same CA, on
# top of their token.
sec="$STACK_DIR/secrets"
rm -rf "$sec"/*.token "$sec"/*-services.json "$sec/api-keys" "$sec/tls"
tls_on=true
[[ ${MH_STACK_TLS:-on} != off ]] || tls_on=false
MH_SECRETS_TLS=$($tls_on && echo on || echo off) "$MH_ROOT/infra/secrets.sh" "$sec"
api_key=$(cut -d: -f1 "$sec/api-keys")
umask 022

# tls <service>: sets TLS to that service's TLS settings (none with MH_STACK_TLS=off).
tls() {
  TLS=()
  $tls_on || return 0
  TLS=("MH_GRPC_TLS_CA_FILE=$sec/tls/ca.pem" "MH_GRPC_TLS_CLIENT_AUTH=require"
       "MH_GRPC_TLS_CERT_FILE=$sec/tls/$1.pem" "MH_GRPC_TLS_KEY_FILE=$sec/tls/$1.key")
}

# start <name> <port to wait for> <main.js> [VAR=value...]: a detached process (setsid + nohup:
# it outlives this script and a Ctrl-C in this terminal; 9>&- keeps no lock fd), then waits until
# its port accepts connections. Node runs with the flags the service's package.json declares
# ("metaharness": { "nodeFlags" }), as the deploy files start it.
start() {
  local name=$1 port=$2 main=$3; shift 3
  port_open "$port" && die "port $port (for $name) is taken; set MH_STACK_PORT_BASE / MH_STACK_HTTP_PORT / MH_STACK_MODEL_PORT"
  local flags
  flags=$(node -e 'process.stdout.write((require(process.argv[1]).metaharness?.nodeFlags ?? []).join("\n"))' \
    "$MH_ROOT/${main%/dist/*}/package.json")
  local -a node_flags=()
  [[ -n $flags ]] && mapfile -t node_flags <<<"$flags"
  (exec nohup setsid env "$@" node "${node_flags[@]}" "$MH_ROOT/$main" >"$STACK_DIR/logs/$name.log" 2>&1 9>&- </dev/null) &
  echo $! >"$STACK_DIR/pids/$name.pid"
  local deadline=$(( $(now_ms) + STACK_START_TIMEOUT * 1000 ))
  until port_open "$port"; do
    if ! pid_alive "$(<"$STACK_DIR/pids/$name.pid")"; then
      show_tail 30 "$STACK_DIR/logs/$name.log"; die "$name exited during start (log: $STACK_DIR/logs/$name.log)"
    fi
    (( $(now_ms) < deadline )) || { show_tail 30 "$STACK_DIR/logs/$name.log"; die "$name did not listen on $port within ${STACK_START_TIMEOUT}s"; }
    sleep 0.1
  done
  log "$name on 127.0.0.1:$port (pid $(<"$STACK_DIR/pids/$name.pid"))"
}

# PostgreSQL: with TLS on and the local server's CA at hand (infra/up.sh), every service checks
# the server's certificate (sslmode=verify-full, read by node-postgres from the URL).
if $tls_on && [[ -n ${MH_PG_CA_FILE:-} && $MH_DATABASE_URL != *sslmode=* ]]; then
  ca_param=$(node -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$MH_PG_CA_FILE")
  MH_DATABASE_URL+="$([[ $MH_DATABASE_URL == *\?* ]] && echo '&' || echo '?')sslmode=verify-full&sslrootcert=$ca_param"
fi

# Kafka: with TLS on and the local broker's secured listeners at hand (infra/up.sh), the session
# log publishes over SASL_SSL with SCRAM-SHA-512 and the harnesses consume with a client
# certificate, as against a managed cluster; otherwise plaintext on MH_KAFKA_BROKERS.
kafka_log=("MH_KAFKA_BROKERS=$MH_KAFKA_BROKERS")
kafka_harness=("MH_KAFKA_BROKERS=$MH_KAFKA_BROKERS")
if $tls_on && [[ -n ${MH_KAFKA_SECURE_LISTENERS:-} ]]; then
  # One value per line, in this order; node fails on a missing key instead of printing "undefined".
  secure=$(node -e '
    const s = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
    for (const k of ["saslSslBrokers", "sslBrokers", "caFile", "clientCertFile", "clientKeyFile", "username", "passwordFile"]) {
      if (typeof s[k] !== "string" || s[k] === "" || s[k].includes("\n")) throw new Error(`no ${k} in ${process.argv[1]}`);
      console.log(s[k]);
    }
  ' "$MH_KAFKA_SECURE_LISTENERS") || die "cannot read the Kafka listeners from $MH_KAFKA_SECURE_LISTENERS"
  mapfile -t k <<<"$secure"
  kafka_log=("MH_KAFKA_BROKERS=${k[0]}" "MH_KAFKA_TLS_CA_FILE=${k[2]}" "MH_KAFKA_SASL_MECHANISM=scram-sha-512"
             "MH_KAFKA_SASL_USERNAME=${k[5]}" "MH_KAFKA_SASL_PASSWORD_FILE=${k[6]}")
  kafka_harness=("MH_KAFKA_BROKERS=${k[1]}" "MH_KAFKA_TLS_CA_FILE=${k[2]}"
                 "MH_KAFKA_TLS_CERT_FILE=${k[3]}" "MH_KAFKA_TLS_KEY_FILE=${k[4]}")
fi

common=("MH_LOG_LEVEL=${MH_LOG_LEVEL:-info}")
[[ -z ${MH_OTLP_ENDPOINT:-} ]] || common+=("MH_OTLP_ENDPOINT=$MH_OTLP_ENDPOINT")
log_addr="127.0.0.1:$PORT_LOG"
proxy_addr="127.0.0.1:$PORT_PROXY"

tls session-log
start session-log "$PORT_LOG" apps/session-log/dist/main.js "${common[@]}" "${TLS[@]}" \
  MH_GRPC_PORT="$PORT_LOG" MH_DATABASE_URL="$MH_DATABASE_URL" "${kafka_log[@]}" \
  MH_SERVICE_TOKENS_FILE="$sec/log-services.json"
# The stack's upstreams (the tests' and demo's MCP servers, token endpoints and git remotes) run on
# this machine, so the proxy may connect to private addresses here; a real deployment leaves it off.
tls credential-vault-proxy
start credential-vault-proxy "$PORT_PROXY" apps/credential-vault-proxy/dist/main.js "${common[@]}" "${TLS[@]}" \
  MH_GRPC_PORT="$PORT_PROXY" MH_REMOTE_HTTP_PORT="$PORT_PROXY_REMOTE" MH_DATABASE_URL="$MH_DATABASE_URL" \
  MH_SESSION_LOG_ADDR="$log_addr" MH_SESSION_LOG_TOKEN_FILE="$sec/proxy-log.token" \
  MH_MASTER_KEY_FILE="$sec/master.key" MH_SERVICE_TOKENS_FILE="$sec/proxy-services.json" \
  MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS=true
tls sandbox-broker
start sandbox-broker "$PORT_BROKER" apps/sandbox-broker/dist/main.js "${common[@]}" "${TLS[@]}" \
  MH_GRPC_PORT="$PORT_BROKER" MH_DATABASE_URL="$MH_DATABASE_URL" \
  MH_SESSION_LOG_ADDR="$log_addr" MH_SESSION_LOG_TOKEN_FILE="$sec/broker-log.token" \
  MH_BROKER_ID="mh-stack-$PORT_BROKER" MH_CREDENTIAL_PROXY_ADDR="$proxy_addr" MH_CREDENTIAL_PROXY_TOKEN_FILE="$sec/broker-proxy.token" \
  MH_SERVICE_TOKENS_FILE="$sec/broker-services.json"

model=()
if [[ -n ${ANTHROPIC_API_KEY:-} ]]; then
  model=("ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY")
  log "model: Anthropic's API (ANTHROPIC_API_KEY)"
else
  start offline-model "$PORT_MODEL" packages/offline-model/dist/main.js "${common[@]}" MH_OFFLINE_MODEL_PORT="$PORT_MODEL"
  model=("MH_MODEL_BASE_URL=http://127.0.0.1:$PORT_MODEL" "ANTHROPIC_API_KEY=offline")
fi

for (( i = 0; i < STACK_HARNESSES; i++ )); do
  port=$(( PORT_HARNESS + i ))
  tls harness
  start "harness-$((i + 1))" "$port" apps/harness/dist/main.js "${common[@]}" "${TLS[@]}" "${model[@]}" \
    MH_GRPC_PORT="$port" MH_INSTANCE_ID="harness-$((i + 1))" MH_SERVICE_TOKENS_FILE="$sec/harness-services.json" \
    MH_SESSION_LOG_ADDR="$log_addr" MH_SESSION_LOG_TOKEN_FILE="$sec/harness-log.token" \
    MH_SANDBOX_BROKER_ADDR="127.0.0.1:$PORT_BROKER" MH_SANDBOX_BROKER_TOKEN_FILE="$sec/harness-broker.token" \
    MH_KAFKA_WAKE=true "${kafka_harness[@]}" \
    MH_CREDENTIAL_PROXY_ADDR="$proxy_addr" MH_CREDENTIAL_PROXY_TOKEN_FILE="$sec/harness-proxy.token"
done

# The gateway's Wake goes to the first harness; every instance also takes wakes from Kafka, so
# sessions go on when that one is down.
tls gateway
start gateway "$PORT_HTTP" apps/gateway/dist/main.js "${common[@]}" "${TLS[@]}" \
  MH_HTTP_PORT="$PORT_HTTP" MH_DATABASE_URL="$MH_DATABASE_URL" \
  MH_SESSION_LOG_ADDR="$log_addr" MH_SESSION_LOG_TOKEN_FILE="$sec/gateway-log.token" \
  MH_HARNESS_ADDR="127.0.0.1:$PORT_HARNESS" MH_HARNESS_TOKEN_FILE="$sec/gateway-harness.token" MH_GATEWAY_API_KEYS="$api_key:local" \
  MH_CREDENTIAL_PROXY_ADDR="$proxy_addr" MH_CREDENTIAL_PROXY_TOKEN_FILE="$sec/gateway-proxy.token" \
  MH_SANDBOX_BROKER_ADDR="127.0.0.1:$PORT_BROKER" MH_SANDBOX_BROKER_TOKEN_FILE="$sec/gateway-broker.token"

log "stack up in $(elapsed "$t0"): logs in $STACK_DIR/logs, stop with infra/stack/down.sh"
echo "MH_URL=http://127.0.0.1:$PORT_HTTP"
echo "MH_API_KEY=$api_key"
