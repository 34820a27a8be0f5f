#!/usr/bin/env bash
# End-to-end check of the running broker: produces one message to a new topic with the console
# producer, reads it back with the console consumer, then deletes the topic. Takes a few seconds
# (three JVM starts); up.sh does not run it.
set -euo pipefail
MH_LOG_TAG=kafka
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tool="$KAFKA_HOME/tool.sh"

t0=$(now_ms)
kafka_probe "$KAFKA_PORT" || die "no broker answers on $KAFKA_BROKERS (run infra/kafka/up.sh)"
topic="mh-infra-smoke-$(date +%s)-$RANDOM"
msg="hello from smoke.sh $(date -Is) $RANDOM"

log "producing to $topic"
printf '%s\n' "$msg" | "$tool" kafka.tools.ConsoleProducer --bootstrap-server "$KAFKA_BROKERS" \
  --topic "$topic" --producer-property acks=all >/dev/null
log "consuming from $topic"
got=$("$tool" org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$KAFKA_BROKERS" \
  --topic "$topic" --from-beginning --max-messages 1 --timeout-ms 30000 2>/dev/null || true)
"$tool" org.apache.kafka.tools.TopicCommand --bootstrap-server "$KAFKA_BROKERS" --delete --topic "$topic" \
  || log "WARNING: could not delete $topic"
[[ $got == "$msg" ]] || die "read back '${got}', expected '${msg}'"
log "OK: produced and consumed one message ($(elapsed "$t0"))"
