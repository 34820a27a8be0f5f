/**
 * Wakes from Kafka: harness instances consume the session-events topic as one consumer group.
 * Partitions are keyed by session, so each session's input reaches one instance, and starting
 * more instances spreads the sessions with no other change. A user.* event wakes its session.
 */
import type { BusConsumer, EventBus } from "@metaharness/event-bus";
import type { Logger } from "@metaharness/service-kit";
import type { Supervisor } from "../supervisor.js";
import { SESSION_EVENTS_MAX_MESSAGE_BYTES } from "@metaharness/events";
import { extractFromHeaders, ROOT_CONTEXT, SpanKind, withSpan } from "@metaharness/telemetry";

export async function wakeFromKafka(
  bus: EventBus,
  opts: { topic: string; partitions: number; groupId: string },
  supervisor: Supervisor,
  logger: Logger,
): Promise<BusConsumer> {
  // The harness may start before the log has published anything.
  await bus.ensureTopics([{ topic: opts.topic, partitions: opts.partitions, maxMessageBytes: SESSION_EVENTS_MAX_MESSAGE_BYTES }]);
  return bus.subscribe({
    groupId: opts.groupId,
    topics: [opts.topic],
    fromBeginning: false,
    handler: async (msg) => {
      if (!(msg.headers["mh-event-type"] ?? "").startsWith("user.")) return;
      // A child of whoever appended the event (the record's traceparent): in the trace, the wake
      // follows the user's send.
      const parent = extractFromHeaders(msg.headers, ROOT_CONTEXT);
      // Named for what it does, not the bus: `mh dev`'s bus is in-process, not Kafka.
      await withSpan("harness.wake", { "mh.session_id": msg.key, "messaging.destination.name": opts.topic }, async () => {
        try {
          await supervisor.wake(msg.key);
        } catch (err) {
          // The sweeper finds the session anyway; never block the partition on one session.
          logger.warn({ err, sessionId: msg.key }, "wake from Kafka failed");
        }
      }, { parent, kind: SpanKind.CONSUMER });
    },
  });
}
