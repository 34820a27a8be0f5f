/**
 * Wakes from Kafka: harness instances consume the session-events topic as one consumer group.
 * Partitions are keyed by session, so each session's input reaches one instance, and starting
 * more instances spreads the sessions with no other change. A user.* event wakes its session.
 *
 * The group is joined in the background (keepSubscribed): a harness serves Wake and sweeps for
 * orphans from its start, whatever Kafka does. A join waits for any member killed without
 * leaving until the session timeout drops it; the sweeper covers that gap, and a harness that
 * waited for its join, as it once did, served nothing for 29-32 s after a restart and exited when
 * the join outran its timeout.
 */
import type { BusSubscription, EventBus } from "@metaharness/event-bus";
import type { Logger } from "@metaharness/service-kit/logging";
import type { Supervisor } from "../supervisor.js";
import { SESSION_EVENTS_MAX_MESSAGE_BYTES } from "@metaharness/events";
import { extractFromHeaders, ROOT_CONTEXT, SpanKind, withSpan } from "@metaharness/telemetry";

export function wakeFromKafka(
  bus: EventBus,
  opts: { topic: string; partitions: number; groupId: string },
  supervisor: Supervisor,
  logger: Logger,
): BusSubscription {
  const startedAt = Date.now();
  return bus.keepSubscribed({
    groupId: opts.groupId,
    topics: [opts.topic],
    fromBeginning: false,
    // The harness may start before the log has published anything.
    ensure: [{ topic: opts.topic, partitions: opts.partitions, maxMessageBytes: SESSION_EVENTS_MAX_MESSAGE_BYTES }],
    onJoined: ({ durationMs, first }) => {
      // Read by the restart benchmark (test/bench/recovery.ts): the time from start to the first join.
      logger.info({ group: opts.groupId, join_ms: durationMs, since_start_ms: Date.now() - startedAt, first }, "joined the wake group");
    },
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
