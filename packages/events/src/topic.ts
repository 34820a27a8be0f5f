/**
 * The Kafka topic every appended event is published to (by the session log's outbox relay), as
 * far as the services that create it need to agree: whichever starts first creates it (the relay,
 * the harness's wake consumer), and a topic created with Kafka's default max.message.bytes
 * (1 MiB) refuses an event at the default payload limit once its envelope is added, which stops
 * its partition's publishing.
 */
export const SESSION_EVENTS_TOPIC = "metaharness.session-events";

/**
 * The topic's max.message.bytes: an event at up to 7.75 MiB of payload (the default limit is
 * 1 MiB), with its envelope, key and headers. A session log configured for larger payloads
 * creates the topic with more room (payload + 256 KiB).
 */
export const SESSION_EVENTS_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;
