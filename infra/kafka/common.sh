# shellcheck shell=bash disable=SC2034  # variables here are used by the scripts that source this file
# Settings shared by the infra/kafka scripts. Source it after ../lib.sh.
#
# One Kafka 3.9 broker in KRaft combined mode (broker + controller in one JVM), run straight from
# the jars that Maven fetches for infra/kafka/pom.xml. Everything it writes is under
# <repo>/.local/kafka.

KAFKA_VERSION=3.9.1
KAFKA_PORT="${MH_KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${MH_KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_BROKERS="127.0.0.1:${KAFKA_PORT}"
# The secured listeners, for the tests of Kafka over TLS and SASL (see up.sh).
KAFKA_SASL_SSL_PORT="${MH_KAFKA_SASL_SSL_PORT:-9096}"
KAFKA_SSL_PORT="${MH_KAFKA_SSL_PORT:-9097}"

KAFKA_HOME="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KAFKA_STATE="${MH_LOCAL}/kafka"
KAFKA_LIBS="${KAFKA_STATE}/libs"
KAFKA_CONF="${KAFKA_STATE}/config"
KAFKA_DATA="${KAFKA_STATE}/data"
KAFKA_LOGS="${KAFKA_STATE}/logs"
KAFKA_PIDFILE="${KAFKA_STATE}/kafka.pid"
KAFKA_CLUSTER_ID_FILE="${KAFKA_STATE}/cluster.id"
KAFKA_SERVER_LOG="${KAFKA_LOGS}/server.log"
KAFKA_OUT="${KAFKA_LOGS}/kafka.out"
KAFKA_TLS="${KAFKA_STATE}/tls"
KAFKA_SASL_USER=metaharness
KAFKA_SASL_PASSWORD_FILE="${KAFKA_STATE}/sasl/password"
# What the secured listeners are and how to reach them, for the tests (JSON).
KAFKA_SECURE_FILE="${KAFKA_STATE}/secure.json"


# Prints the pid of this checkout's broker when it is alive; returns 1 otherwise. The command line
# is checked too, so that a pid reused by another process after a reboot is not mistaken for it.
kafka_pid() {
  local pid
  [[ -s $KAFKA_PIDFILE ]] || return 1
  pid=$(<"$KAFKA_PIDFILE")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  pid_alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -F "kafka.Kafka ${KAFKA_CONF}/server.properties" >/dev/null || return 1
  echo "$pid"
}

# A real Kafka request from bash: ApiVersions v0 (api key 18, correlation id 0x4d480001, client
# id "mh") sent to 127.0.0.1:$1; true when the answer carries our correlation id and error code 0.
# The broker only serves its PLAINTEXT listener once start-up is complete.
kafka_probe() {
  local port=$1 reply
  reply=$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "\x00\x00\x00\x0c\x00\x12\x00\x00\x4d\x48\x00\x01\x00\x02mh" >&3
    head -c 10 <&3 | od -An -tx1 | tr -d " \n"
  ' _ "$port" 2>/dev/null) || return 1
  [[ $reply == ????????4d4800010000 ]]
}
