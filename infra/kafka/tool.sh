#!/usr/bin/env bash
# Runs one of Kafka's command-line tools from the fetched jars (run up.sh once first), e.g.
#   infra/kafka/tool.sh org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:9092 --list
# Main classes in Kafka 3.9.1:
#   kafka.tools.ConsoleProducer                        (kafka-console-producer)
#   org.apache.kafka.tools.consumer.ConsoleConsumer    (kafka-console-consumer)
#   org.apache.kafka.tools.TopicCommand                (kafka-topics)
#   org.apache.kafka.tools.consumer.group.ConsumerGroupCommand (kafka-consumer-groups)
#   org.apache.kafka.tools.GetOffsetShell              (kafka-get-offsets)
#   kafka.tools.StorageTool                            (kafka-storage)
set -euo pipefail
MH_LOG_TAG=kafka
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=./common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

(( $# >= 1 )) || die "usage: $0 <main class> [args...]"
[[ -f $KAFKA_LIBS/.complete ]] || die "no Kafka jars in $KAFKA_LIBS yet: run infra/kafka/up.sh first"
exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
  -Dlog4j.configuration="file:$KAFKA_CONF/tools-log4j.properties" \
  -cp "$KAFKA_LIBS/*" "$@"
