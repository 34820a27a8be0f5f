/**
 * An example Kafka consumer building analytics from the session-events topic (see
 * docs/kafka.md): per session, the model's token usage, the agent's tool calls and the last
 * status, printed on stdout as one JSON line whenever a session's figures change; per tenant (the
 * record's mh-tenant header), token usage and each tool's calls, errors and error rate, as a
 * {"tenant_usage": ...} line whenever they change (examples/analytics-python/consumer.py prints
 * the same lines in Python); and a {"gap": ...} line for events that never arrived. It does what any consumer of the topic does:
 * decodes each record's value (metaharness.v1.Event), processes each session's events once
 * (SeqTracker: a redelivered event is skipped), and reaches Kafka with the services' own settings
 * (MH_KAFKA_BROKERS, MH_KAFKA_TOPIC, MH_KAFKA_TLS*, MH_KAFKA_SASL_*). Its figures live in memory:
 * a real one would store them with the tracker's seqs, in one transaction.
 *
 *   MH_KAFKA_BROKERS=127.0.0.1:9092 npm run usage-consumer -w @metaharness/session-log
 */
import { createKafkaBus, KAFKA_SECURITY_ENV, loadKafkaSecurity } from "@metaharness/event-bus";
import { SESSION_EVENTS_TOPIC, SeqTracker } from "@metaharness/events";
import { Event } from "@metaharness/proto";
import { env, readConfig } from "@metaharness/service-kit/config";
import { runService } from "@metaharness/service-kit/lifecycle";
import type { Logger } from "@metaharness/service-kit/logging";
import { extractFromHeaders, ROOT_CONTEXT, SpanKind, withSpan } from "@metaharness/telemetry";
import { TenantBook } from "./tenant-usage.js";
import { countEvent, emptyUsage, type SessionUsage } from "./usage.js";

const SPEC = {
  brokers: env.list("MH_KAFKA_BROKERS", { default: ["127.0.0.1:9092"] }),
  topic: env.string("MH_KAFKA_TOPIC", { default: SESSION_EVENTS_TOPIC }),
  group: env.string("MH_USAGE_GROUP", { default: "metaharness-usage-example" }),
  logLevel: env.enumOf("MH_LOG_LEVEL", ["trace", "debug", "info", "warn", "error", "silent"], { default: "info" }),
  otlpEndpoint: env.optionalUrl("MH_OTLP_ENDPOINT"),
  ...KAFKA_SECURITY_ENV,
};
const loadConfig = () => readConfig(SPEC, process.env);

async function start(config: ReturnType<typeof loadConfig>, logger: Logger): Promise<{ stop(): Promise<void> }> {
  const bus = createKafkaBus({ brokers: config.brokers, clientId: config.group, logger, ...(await loadKafkaSecurity(config)) });
  const seqs = new SeqTracker();
  const usage = new Map<string, SessionUsage>();
  const tenants = new TenantBook();
  const print = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
  const consumer = await bus.subscribe({
    groupId: config.group,
    topics: [config.topic],
    fromBeginning: true,
    // Each record in a span that is a child of whoever appended the event (its traceparent).
    handler: (msg) =>
      withSpan(
        "usage.count",
        { "mh.session_id": msg.key },
        () => {
          const event = Event.decode(msg.value);
          const verdict = seqs.accept(msg.key, event.seq);
          if (verdict.kind === "duplicate") return Promise.resolve();
          if (verdict.kind === "gap") print({ gap: { session_id: msg.key, from: verdict.from, to: verdict.to } });
          const mine = usage.get(msg.key) ?? emptyUsage(msg.key);
          usage.set(msg.key, mine);
          if (countEvent(mine, event)) print(mine);
          const tenant = tenants.count(msg.headers["mh-tenant"] ?? "", event);
          if (tenant !== undefined) print({ tenant_usage: tenant });
          // Nothing follows a session's termination: its figures are final and need no memory.
          // Its last seq stays: its records may come again while the topic holds them, and
          // without it they would count twice (docs/kafka.md).
          if (event.type === "session.status_terminated") usage.delete(msg.key);
          return Promise.resolve();
        },
        { parent: extractFromHeaders(msg.headers, ROOT_CONTEXT), kind: SpanKind.CONSUMER },
      ),
  });
  logger.info({ topic: config.topic, group: config.group }, "counting usage");
  return {
    stop: async () => {
      await consumer.close();
      await bus.close();
    },
  };
}

await runService({ name: "usage-consumer", loadConfig, start });
