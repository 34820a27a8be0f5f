#!/usr/bin/env bash
# Fetches (once), formats (once), starts and checks the tests' Kafka broker; safe to run any number
# of times, and quick when the broker already answers. Prints the bootstrap address on stdout;
# progress goes to stderr. Data survives down.sh/up.sh.
#
#   MH_KAFKA_PORT             PLAINTEXT listener on 127.0.0.1 (default 9092)
#   MH_KAFKA_CONTROLLER_PORT  KRaft controller listener on 127.0.0.1 (default 9093)
#   MH_KAFKA_SASL_SSL_PORT    SASL_SSL listener (PLAIN, SCRAM-SHA-256/512) on 127.0.0.1 (default 9096)
#   MH_KAFKA_SSL_PORT         SSL listener that requires a client certificate (default 9097)
#   MH_KAFKA_START_TIMEOUT    seconds to wait for readiness (default 90)
#   MH_KAFKA_HEAP_OPTS        JVM heap (default "-Xmx512m -Xms256m")
set -euo pipefail
MH_LOG_TAG=kafka
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

START_TIMEOUT="${MH_KAFKA_START_TIMEOUT:-90}"
read -r -a HEAP_OPTS <<<"${MH_KAFKA_HEAP_OPTS:--Xmx512m -Xms256m}"
t0=$(now_ms)

PORTS=("$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" "$KAFKA_SASL_SSL_PORT" "$KAFKA_SSL_PORT")
for p in "${PORTS[@]}"; do
  [[ $p =~ ^[0-9]+$ ]] || die "MH_KAFKA_PORT, MH_KAFKA_CONTROLLER_PORT, MH_KAFKA_SASL_SSL_PORT and MH_KAFKA_SSL_PORT must be numbers"
done
(( $(printf '%s\n' "${PORTS[@]}" | sort -u | wc -l) == ${#PORTS[@]} )) || die "the broker's four ports must differ"

# ---- secured listeners: a certificate from the development CA, and a SASL user ----------------------
# The broker serves kafka.pem; the SSL listener checks clients against ca.pem (client.pem is the
# tests' certificate). A re-issued certificate changes server.properties (its digest is in it), so
# the broker restarts to load it. Made under the lock (step 1b); here only read.
keystore="$KAFKA_TLS/kafka-keystore.pem"
secured_state() {
  # Missing files (a fresh checkout) read as empty: with pipefail, a failing cat would end the script.
  keystore_digest=$({ cat "$keystore" "$KAFKA_TLS/ca.pem" 2>/dev/null || true; } | sha256sum | cut -c1-16)
  sasl_password=$(cat "$KAFKA_SASL_PASSWORD_FILE" 2>/dev/null || true)
}
# The certificates have 7 days left at least, and the key store and password exist.
secured_current() {
  local f
  for f in ca kafka client; do
    openssl x509 -in "$KAFKA_TLS/$f.pem" -noout -checkend 604800 >/dev/null 2>&1 || return 1
  done
  [[ -s $keystore && -n $sasl_password ]]
}
secured_state

server_properties() {
  cat <<EOF
# Written by infra/kafka/up.sh on every run: change that script, not this file.
# Single node, KRaft combined mode, for tests.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:${KAFKA_CONTROLLER_PORT}
listeners=PLAINTEXT://127.0.0.1:${KAFKA_PORT},CONTROLLER://127.0.0.1:${KAFKA_CONTROLLER_PORT},SASL_SSL://127.0.0.1:${KAFKA_SASL_SSL_PORT},SSL://127.0.0.1:${KAFKA_SSL_PORT}
advertised.listeners=PLAINTEXT://127.0.0.1:${KAFKA_PORT},SASL_SSL://127.0.0.1:${KAFKA_SASL_SSL_PORT},SSL://127.0.0.1:${KAFKA_SSL_PORT}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL

# The secured listeners, for the tests (key store digest ${keystore_digest}). SASL_SSL: PLAIN with
# its one user in this file, SCRAM with the same user in the cluster's metadata (added after start).
# SSL: a client certificate from the development CA instead of a password.
ssl.keystore.type=PEM
ssl.keystore.location=${keystore}
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${KAFKA_SASL_USER}="${sasl_password}";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.ssl.ssl.client.auth=required
listener.name.ssl.ssl.truststore.type=PEM
listener.name.ssl.ssl.truststore.location=${KAFKA_TLS}/ca.pem

log.dirs=${KAFKA_DATA}
num.partitions=3
auto.create.topics.enable=true
delete.topic.enable=true
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
# Fewer internal partitions than the default 50: the first consumer group / transaction on a
# fresh broker then waits for 5 partitions to be created instead of 50.
offsets.topic.num.partitions=5
transaction.state.log.num.partitions=5
group.initial.rebalance.delay.ms=0
num.recovery.threads.per.data.dir=1
# Keep the compaction buffer small: the heap is 512 MB.
log.cleaner.dedupe.buffer.size=33554432
log.retention.hours=168
EOF
}

log4j_properties() {
  cat <<EOF
# Written by infra/kafka/up.sh on every run. Everything goes to server.log; the console
# (kafka.out) only gets errors.
log4j.rootLogger=INFO, file, stdout

log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=${KAFKA_SERVER_LOG}
log4j.appender.file.MaxFileSize=50MB
log4j.appender.file.MaxBackupIndex=3
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.Threshold=ERROR
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n

log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.kafka.clients=WARN
EOF
}

# log4j for the command-line tools (tool.sh, smoke.sh): warnings only, on stderr.
tools_log4j_properties() {
  cat <<'EOF'
# Written by infra/kafka/up.sh on every run.
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
# "UNKNOWN_TOPIC_OR_PARTITION ... recoverable": normal while a topic is being auto-created.
log4j.logger.org.apache.kafka.clients.NetworkClient=ERROR
EOF
}

# How the tests reach the secured listeners.
secure_listeners() {
  cat <<EOF
{
  "saslSslBrokers": "127.0.0.1:${KAFKA_SASL_SSL_PORT}",
  "sslBrokers": "127.0.0.1:${KAFKA_SSL_PORT}",
  "caFile": "${KAFKA_TLS}/ca.pem",
  "clientCertFile": "${KAFKA_TLS}/client.pem",
  "clientKeyFile": "${KAFKA_TLS}/client.key",
  "username": "${KAFKA_SASL_USER}",
  "passwordFile": "${KAFKA_SASL_PASSWORD_FILE}"
}
EOF
}

# The SCRAM user is in the cluster's metadata once added for this cluster id and password. The
# marker lives with the data: deleting the data folder forgets the user, and the marker with it.
SCRAM_MARKER="${KAFKA_DATA}/.metaharness-scram-user"
scram_id() { printf '%s %s' "$(cat "$KAFKA_CLUSTER_ID_FILE" 2>/dev/null)" "$sasl_password" | sha256sum | cut -c1-16; }
scram_current() { [[ -s $KAFKA_CLUSTER_ID_FILE && "$(cat "$SCRAM_MARKER" 2>/dev/null)" == "$(scram_id)" ]]; }

conf_current() {
  [[ "$(cat "$KAFKA_CONF/server.properties" 2>/dev/null)" == "$(server_properties)" ]]
}

# Writes file $1 from the output of command $2 when it differs (through a temporary file and mv, so
# a concurrent reader never sees half a file). Returns 0 when it wrote.
write_if_changed() {
  local file=$1 content
  content=$("$2")
  [[ "$(cat "$file" 2>/dev/null)" != "$content" ]] || return 1
  mkdir -p "$(dirname "$file")"
  # 0600: server.properties holds the SASL user's password.
  (umask 077 && printf '%s\n' "$content" >"$file.tmp.$$")
  mv -f "$file.tmp.$$" "$file"
}

# The log4j files take effect at the next JVM start; keep them current even on the fast path.
write_if_changed "$KAFKA_CONF/log4j.properties" log4j_properties || true
write_if_changed "$KAFKA_CONF/tools-log4j.properties" tools_log4j_properties || true

# ---- fast path: our broker is alive, configured as wanted and answering ---------------------------
if pid=$(kafka_pid) && secured_current && conf_current && scram_current && [[ "$(cat "$KAFKA_SECURE_FILE" 2>/dev/null)" == "$(secure_listeners)" ]] \
   && kafka_probe "$KAFKA_PORT"; then
  log "already running on ${KAFKA_BROKERS} (pid $pid, $(elapsed "$t0"))"
  echo "$KAFKA_BROKERS"
  exit 0
fi

take_lock "${KAFKA_STATE}/up.lock"
mkdir -p "$KAFKA_LIBS" "$KAFKA_CONF" "$KAFKA_DATA" "$KAFKA_LOGS"

# ---- 1. Java and the jars -----------------------------------------------------------------------
if ! command -v java >/dev/null; then
  log "java not found"
  apt_install openjdk-17-jre-headless
fi
java_major=$(java -XshowSettings:properties -version 2>&1 | sed -nE 's/^ *java\.specification\.version = ([0-9]+).*/\1/p')
[[ -n $java_major ]] && (( java_major >= 17 )) || die "need Java 17 or newer on PATH (found '${java_major:-?}')"

# .complete holds the checksum of the pom the jars came from: editing pom.xml refetches them.
pom_sum=$(sha256sum "$KAFKA_HOME/pom.xml" | cut -d' ' -f1)
libs_changed=0
if [[ ! -f $KAFKA_LIBS/kafka_2.13-${KAFKA_VERSION}.jar || "$(cat "$KAFKA_LIBS/.complete" 2>/dev/null)" != "$pom_sum" ]]; then
  if ! command -v mvn >/dev/null; then
    log "mvn not found"
    apt_install maven
  fi
  log "fetching Kafka ${KAFKA_VERSION} jars with Maven into $KAFKA_LIBS"
  tmp="${KAFKA_STATE}/libs.tmp"
  rm -rf "$tmp"
  # -f/--file: the pom lives in the repository; the jars go to .local. Output to a log: Maven is
  # chatty even with -q (download progress, colour codes).
  if ! (cd "$KAFKA_HOME" && mvn -B -q -Dstyle.color=never -f "$KAFKA_HOME/pom.xml" \
        dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp") \
        >"$KAFKA_LOGS/mvn.log" 2>&1 9>&-; then
    show_tail 30 "$KAFKA_LOGS/mvn.log"
    die "Maven could not fetch the Kafka jars (log: $KAFKA_LOGS/mvn.log)"
  fi
  [[ -f $tmp/kafka_2.13-${KAFKA_VERSION}.jar ]] || die "Maven finished but kafka_2.13-${KAFKA_VERSION}.jar is missing"
  echo "$pom_sum" >"$tmp/.complete"
  rm -rf "$KAFKA_LIBS"
  mv "$tmp" "$KAFKA_LIBS"
  log "fetched $(find "$KAFKA_LIBS" -name '*.jar' | wc -l) jars"
  libs_changed=1
fi

# ---- 1b. the secured listeners' certificates, key store and password ----------------------------
command -v openssl >/dev/null || apt_install openssl
"$KAFKA_HOME/../tls/dev-certs.sh" "$KAFKA_TLS" kafka client 9>&-
# Kafka's PEM key store: the key (PKCS#8, unencrypted) and its certificate in one file.
if [[ "$(cat "$KAFKA_TLS/kafka.key" "$KAFKA_TLS/kafka.pem")" != "$(cat "$keystore" 2>/dev/null)" ]]; then
  (umask 077 && cat "$KAFKA_TLS/kafka.key" "$KAFKA_TLS/kafka.pem" >"$keystore.tmp.$$")
  mv -f "$keystore.tmp.$$" "$keystore"
fi
if [[ ! -s $KAFKA_SASL_PASSWORD_FILE ]]; then
  mkdir -p "$(dirname "$KAFKA_SASL_PASSWORD_FILE")"
  (umask 077 && head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$KAFKA_SASL_PASSWORD_FILE.tmp.$$")
  mv -f "$KAFKA_SASL_PASSWORD_FILE.tmp.$$" "$KAFKA_SASL_PASSWORD_FILE"
fi
secured_state
chmod 600 "$KAFKA_CONF/server.properties" 2>/dev/null || true

# ---- 2. configuration ---------------------------------------------------------------------------
conf_changed=0
write_if_changed "$KAFKA_CONF/server.properties" server_properties && conf_changed=1

# ---- 3. storage, formatted once with a cluster id kept in a file -------------------------------------
if [[ ! -f $KAFKA_DATA/meta.properties ]]; then
  # A Kafka Uuid is 16 random bytes in URL-safe base64 without padding (22 characters), what
  # `kafka-storage random-uuid` prints; made here to save a JVM start. Like Kafka's randomUuid, it
  # never starts with "-": the tool's argument parser reads "-t -Xyz..." as a missing value (1 id
  # in 64 did, and a file holding one from before is remade here, as nothing was formatted with it).
  while [[ ! -s $KAFKA_CLUSTER_ID_FILE || $(<"$KAFKA_CLUSTER_ID_FILE") == -* ]]; do
    head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' >"$KAFKA_CLUSTER_ID_FILE"
  done
  cluster_id=$(<"$KAFKA_CLUSTER_ID_FILE")
  log "formatting storage $KAFKA_DATA (cluster id $cluster_id)"
  java -cp "$KAFKA_LIBS/*" -Dlog4j.configuration="file:$KAFKA_CONF/tools-log4j.properties" \
    kafka.tools.StorageTool format -t "$cluster_id" -c "$KAFKA_CONF/server.properties" --ignore-formatted \
    >"$KAFKA_LOGS/format.log" 2>&1 9>&- \
    || { show_tail 30 "$KAFKA_LOGS/format.log"; die "kafka-storage format failed"; }
elif [[ ! -s $KAFKA_CLUSTER_ID_FILE ]]; then
  sed -n 's/^cluster\.id=//p' "$KAFKA_DATA/meta.properties" >"$KAFKA_CLUSTER_ID_FILE"
fi

# ---- 4. broker -----------------------------------------------------------------------------------
if pid=$(kafka_pid) && (( conf_changed || libs_changed )); then
  log "settings or jars changed; restarting"
  MH_KAFKA_LOCK_HELD=1 "$KAFKA_HOME/down.sh" 9>&-
fi

if ! pid=$(kafka_pid); then
  rm -f "$KAFKA_PIDFILE"
  for p in "${PORTS[@]}"; do
    if port_open "$p"; then
      ss -ltnp "sport = :$p" 2>/dev/null >&2 || true
      die "port $p is taken by another process; stop it or set MH_KAFKA_PORT / MH_KAFKA_CONTROLLER_PORT / MH_KAFKA_SASL_SSL_PORT / MH_KAFKA_SSL_PORT"
    fi
  done
  log_offset=$(stat -c %s "$KAFKA_SERVER_LOG" 2>/dev/null || echo 0)
  echo "$log_offset" >"$KAFKA_STATE/start.offset"
  log "starting broker (heap ${HEAP_OPTS[*]}, logs $KAFKA_LOGS)"
  printf '\n===== %s infra/kafka/up.sh starting the broker =====\n' "$(date -Is)" >>"$KAFKA_OUT"
  # setsid + nohup: the broker outlives this script and is not in the caller's process group (a
  # Ctrl-C in the test runner must not stop it). All fds are redirected so that `$(infra/up.sh)`
  # does not wait for the JVM, and 9>&- keeps it from inheriting our lock.
  # setsid does not fork here (a background child of a script is no group leader), so $! is the
  # JVM itself.
  (cd "$KAFKA_STATE" && exec nohup setsid java "${HEAP_OPTS[@]}" \
      -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
      -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true \
      -Dlog4j.configuration="file:$KAFKA_CONF/log4j.properties" -Dkafka.logs.dir="$KAFKA_LOGS" \
      -cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_CONF/server.properties") \
      </dev/null >>"$KAFKA_OUT" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$KAFKA_PIDFILE"
else
  # Started by an earlier run that gave up waiting (or by a concurrent one): wait for it too.
  log "broker already started (pid $pid); checking that it answers"
  log_offset=$(cat "$KAFKA_STATE/start.offset" 2>/dev/null || echo 0)
fi

# ---- 5. readiness: "Kafka Server started" in this start's log, then a real ApiVersions answer -------
started_in_log() {
  local size
  size=$(stat -c %s "$KAFKA_SERVER_LOG" 2>/dev/null || echo 0)
  (( size < log_offset )) && log_offset=0   # the log rolled over
  # No `grep -q`: it would exit at the first match, tail would die of SIGPIPE, and pipefail would
  # turn the match into a failure.
  tail -c +"$((log_offset + 1))" "$KAFKA_SERVER_LOG" 2>/dev/null | grep 'Kafka Server started' >/dev/null
}
deadline=$(( SECONDS + START_TIMEOUT ))
until started_in_log && kafka_probe "$KAFKA_PORT"; do
  if ! pid_alive "$pid"; then
    show_tail 40 "$KAFKA_SERVER_LOG" "$KAFKA_OUT"
    rm -f "$KAFKA_PIDFILE"
    die "the broker exited during start-up"
  fi
  if (( SECONDS >= deadline )); then
    show_tail 40 "$KAFKA_SERVER_LOG" "$KAFKA_OUT"
    log "not ready after ${START_TIMEOUT}s; stopping it"
    MH_KAFKA_LOCK_HELD=1 "$KAFKA_HOME/down.sh" 9>&- || true
    die "the broker did not come up on ${KAFKA_BROKERS} within ${START_TIMEOUT}s"
  fi
  sleep 0.25
done

# ---- 6. the SCRAM user, kept in the cluster's metadata: added once per cluster and password -------
if ! scram_current; then
  log "adding the SCRAM credentials of user ${KAFKA_SASL_USER}"
  # One mechanism per request: KRaft refuses to alter a user's credentials twice in one. The
  # password goes in a file, not on a command line others can read (ps).
  scram_config="${KAFKA_STATE}/sasl/scram.properties"
  for mechanism in SCRAM-SHA-256 SCRAM-SHA-512; do
    # In a file the value goes without the command line's brackets.
    (umask 077 && printf '%s=iterations=4096,password=%s\n' "$mechanism" "$sasl_password" >"$scram_config")
    java -cp "$KAFKA_LIBS/*" -Dlog4j.configuration="file:$KAFKA_CONF/tools-log4j.properties" \
      kafka.admin.ConfigCommand --bootstrap-server "$KAFKA_BROKERS" --alter --entity-type users --entity-name "$KAFKA_SASL_USER" \
      --add-config-file "$scram_config" >"$KAFKA_LOGS/scram.log" 2>&1 9>&- \
      || { rm -f "$scram_config"; show_tail 20 "$KAFKA_LOGS/scram.log"; die "could not add the $mechanism credentials of ${KAFKA_SASL_USER}"; }
  done
  rm -f "$scram_config"
  scram_id >"$SCRAM_MARKER"
fi
write_if_changed "$KAFKA_SECURE_FILE" secure_listeners || true

log "ready on ${KAFKA_BROKERS} (pid $pid, $(elapsed "$t0"))"
echo "$KAFKA_BROKERS"
