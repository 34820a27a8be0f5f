/**
 * Wires the session-log service: Postgres pool and migrations, the append hub, the holders' lines
 * (HoldLeases: leases freed when their holder dies), the gRPC server
 * and (unless disabled) the outbox relay to Kafka. Used by main.ts and by tests, which start it
 * in-process on port 0.
 */
import { createKafkaBus, kafkaLinkName, loadKafkaSecurity, type EventBus } from "@metaharness/event-bus";
import { SESSION_EVENTS_MAX_MESSAGE_BYTES } from "@metaharness/events";
import { ServiceTokens } from "@metaharness/service-kit/auth";
import { loadGrpcTls, startGrpcServer } from "@metaharness/service-kit/grpc";
import { Cleanups } from "@metaharness/service-kit/lifecycle";
import type { Logger } from "@metaharness/service-kit/logging";
import { ROLES } from "./auth/policy.js";
import type { SessionLogConfig } from "./config.js";
import { migrate, openDb, type Db } from "@metaharness/db";
import { observeLogGauges } from "./metrics.js";
import { OutboxRelay } from "./outbox/relay.js";
import { sessionLogDefinition } from "./stored-wire.js";
import { sessionLogService } from "./service.js";
import { DeltaHub } from "./watch/deltas.js";
import { AppendHub } from "./watch/hub.js";
import { HolderLines } from "./holders/lines.js";
import { LeaseNews } from "./watch/lease-news.js";

const MIGRATIONS = new URL("../migrations/", import.meta.url);

export interface SessionLogHandle {
  readonly port: number;
  readonly address: string;
  readonly db: Db;
  readonly relay: OutboxRelay | undefined;
  /** Stops serving, drains the relay, closes connections. Idempotent. */
  stop(): Promise<void>;
}

export async function startSessionLog(
  config: SessionLogConfig,
  logger: Logger,
  options: { bus?: EventBus } = {},
): Promise<SessionLogHandle> {
  const cleanups = new Cleanups(logger);
  const stop = (): Promise<void> => cleanups.stop();
  try {
    // First: a log that cannot tell its callers apart must not open its port.
    const tokens = await ServiceTokens.load(config.serviceTokensFile, ROLES);
    const tls = await loadGrpcTls(config);
    const kafka = config.relayEnabled ? await loadKafkaSecurity(config) : undefined;
    const db = await openDb(config.databaseUrl, {
      poolSize: config.poolSize,
      onIdleError: (err) => logger.warn({ err }, "idle Postgres connection failed"),
      applicationName: "session-log",
    });
    cleanups.push(() => db.end());
    const applied = await migrate(db, "session-log", MIGRATIONS);
    if (applied.length > 0) logger.info({ applied }, "applied migrations");
    const gauges = observeLogGauges(db);
    cleanups.push(() => Promise.resolve(gauges.stop()));

    const hub = new AppendHub(db, logger);
    await hub.start();
    cleanups.push(() => hub.stop());
    const deltas = new DeltaHub(db, logger);
    await deltas.start();
    cleanups.push(() => deltas.stop());
    const lines = new HolderLines(db, logger);
    await lines.start();
    cleanups.push(() => lines.stop());

    let relay: OutboxRelay | undefined;
    if (config.relayEnabled) {
      const bus =
        options.bus ?? createKafkaBus({ brokers: config.kafkaBrokers, clientId: "session-log", logger, ...kafka });
      if (options.bus === undefined) cleanups.push(() => bus.close());
      // Kafka may be down at start: sessions go on, and the relay creates the topic (if missing)
      // before its first publish, retrying until the broker answers.
      relay = new OutboxRelay({
        db,
        bus,
        topic: config.topic,
        topicPartitions: config.topicPartitions,
        maxMessageBytes: topicMessageBytes(config.maxPayloadBytes),
        hub,
        logger,
        batchSize: config.relayBatchSize,
        pollMs: config.relayPollMs,
        lingerMs: config.relayLingerMs,
        rebalanceMs: config.relayRebalanceMs,
      });
      relay.start();
      const started = relay;
      cleanups.push(() => started.stop());
    }

    const server = await startGrpcServer({
      host: config.host,
      port: config.port,
      healthPort: config.healthPort,
      logger,
      credentials: tls.server,
      services: [
        {
          name: "metaharness.v1.SessionLog",
          definition: sessionLogDefinition,
          implementation: sessionLogService({
            db,
            hub,
            deltas,
            leases: new LeaseNews(),
            lines,
            logger,
            guard: { tokens, logger },
            maxPayloadBytes: config.maxPayloadBytes,
            watchRecheckMs: config.watchRecheckMs,
            appendMaxQueued: config.appendMaxQueued,
          }),
        },
      ],
    });
    cleanups.push(() => server.shutdown(5000));
    // Before the server drains (cleanups run last pushed first): the holders' lines end at once
    // and free nothing, since their holders live on; they hold them again on the next instance.
    cleanups.push(() => Promise.resolve(lines.close()));
    logger.info({ port: server.port, tls: tls.serving, relay: config.relayEnabled, kafka: kafka === undefined ? "off" : kafkaLinkName(kafka) }, "session-log serving");
    return { port: server.port, address: server.address, db, relay, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The topic's max.message.bytes: room for the largest event (its payload limit) with its envelope,
 * key and headers, and never less than what other services create it with.
 */
function topicMessageBytes(maxPayloadBytes: number): number {
  return Math.max(SESSION_EVENTS_MAX_MESSAGE_BYTES, maxPayloadBytes + 256 * 1024);
}
