/**
 * The Kafka topic every appended event is published to (by the session log's outbox relay), as
 * far as the services that create it need to agree: whichever starts first creates it (the relay,
 * the harness's wake consumer), and a topic created with Kafka's default max.message.bytes
 * (1 MiB) refuses an event at the default payload limit once its envelope is added, which stops
 * its partition's publishing.
 */
export const SESSION_EVENTS_TOPIC = "metaharness.session-events";

/**
 * The topic's max.message.bytes, whoever creates it: the largest event a session log can be
 * configured to take (MH_MAX_PAYLOAD_BYTES is at most 16 MiB less 64 KiB, what one gRPC message
 * of ours carries) with its envelope, key and headers. With less (8 MiB, before), a log set for
 * larger events on a topic the harness had created accepted events Kafka refused, and the relay,
 * retrying the oldest first, stopped publishing every shard it held.
 */
export const SESSION_EVENTS_MAX_MESSAGE_BYTES = 16 * 1024 * 1024 + 256 * 1024;
