/**
 * Wires a harness instance: clients of the session log and the sandbox broker, the model, the
 * Harness gRPC service (Wake, ListActive), the line to the log that frees this instance's leases
 * when it dies, the orphan sweeper and (optionally) wakes from Kafka.
 */
import { MhError } from "@metaharness/errors";
import { createKafkaBus, kafkaLinkName, loadKafkaSecurity, type BusSubscription, type EventBus } from "@metaharness/event-bus";
import { createModelClient, type ModelClient } from "@metaharness/model-client";
import { HarnessService, SandboxBrokerClient, SandboxBrokerService, SessionLogClient, SessionLogService } from "@metaharness/proto";
import { guardedUnary, ServiceTokens } from "@metaharness/service-kit/auth";
import { createClient, loadGrpcTls, promisify, readServiceToken, startGrpcServer, type PromiseClient } from "@metaharness/service-kit/grpc";
import { Cleanups } from "@metaharness/service-kit/lifecycle";
import type { Logger } from "@metaharness/service-kit/logging";
import type { HarnessConfig } from "./config.js";
import { externalProcessLoop } from "./loop/external-process.js";
import { toolLoop } from "./loop/tool-loop.js";
import { credentialProxyClient } from "./tools/mcp.js";
import type { HarnessLoop } from "./loop/harness-loop.js";
import { Supervisor } from "./supervisor.js";
import { wakeFromKafka } from "./wake/kafka-wake.js";
import { Sweeper } from "./wake/sweeper.js";
import { LeaseLine } from "./wake/lease-line.js";

export interface HarnessHandle {
  readonly port: number;
  readonly supervisor: Supervisor;
  /** The Kafka wake group's membership (MH_KAFKA_WAKE), joined in the background; undefined without it. */
  readonly wakeGroup: BusSubscription | undefined;
  stop(): Promise<void>;
}

/** Who may call the harness's API: it wakes sessions and lists them, so an admin (the gateway, an operator) only. */
export const ROLES = ["admin"] as const;

/** How long calls in flight (Wake, ListActive: short ones) may finish at shutdown. */
const SERVER_GRACE_MS = 1000;

export const LOOPS: ReadonlyMap<string, HarnessLoop> = new Map([[toolLoop.name, toolLoop], [externalProcessLoop.name, externalProcessLoop]]);

export async function startHarness(
  config: HarnessConfig,
  logger: Logger,
  options: {
    bus?: EventBus;
    model?: ModelClient;
    loops?: ReadonlyMap<string, HarnessLoop>;
    /** Wraps this instance's client of the session log (tests hold one of its calls at a gate). */
    wrapLog?: (log: PromiseClient<typeof SessionLogService>) => PromiseClient<typeof SessionLogService>;
  } = {},
): Promise<HarnessHandle> {
  const cleanups = new Cleanups(logger);
  const stop = (): Promise<void> => cleanups.stop();
  try {
    // First: a harness that cannot tell its callers apart must not open its port.
    const tokens = await ServiceTokens.load(config.serviceTokensFile, ROLES);
    const guard = { tokens, logger };
    const tls = await loadGrpcTls(config);
    const kafka = config.kafkaWake ? await loadKafkaSecurity(config) : undefined;
    const rawLog = createClient(SessionLogClient, config.sessionLogAddress, {
      bearerToken: await readServiceToken(config.sessionLogTokenFile),
      credentials: tls.client,
    });
    cleanups.push(() => Promise.resolve(rawLog.close()));
    const client = promisify(rawLog, SessionLogService);
    const log = options.wrapLog?.(client) ?? client;
    let broker;
    if (config.brokerAddress !== undefined) {
      if (config.brokerTokenFile === undefined) {
        throw new MhError("FAILED_PRECONDITION", "MH_SANDBOX_BROKER_ADDR needs MH_SANDBOX_BROKER_TOKEN_FILE (this harness's service token for the broker)");
      }
      const token = await readServiceToken(config.brokerTokenFile);
      const rawBroker = createClient(SandboxBrokerClient, config.brokerAddress, { bearerToken: token, credentials: tls.client });
      cleanups.push(() => Promise.resolve(rawBroker.close()));
      broker = promisify(rawBroker, SandboxBrokerService);
    }
    let credentialProxy;
    if (config.credentialProxyAddress !== undefined) {
      if (config.credentialProxyTokenFile === undefined) {
        throw new MhError("FAILED_PRECONDITION", "MH_CREDENTIAL_PROXY_ADDR needs MH_CREDENTIAL_PROXY_TOKEN_FILE (this harness's service token)");
      }
      const proxy = await credentialProxyClient(config.credentialProxyAddress, config.credentialProxyTokenFile, tls.client);
      cleanups.push(() => Promise.resolve(proxy.close()));
      credentialProxy = proxy.client;
    }
    const model =
      options.model ??
      createModelClient({
        apiKey: config.modelApiKey,
        model: config.model,
        maxTokens: config.maxTokens,
        retry: { maxAttempts: config.modelMaxAttempts, initialDelayMs: config.modelRetryInitialMs },
        ...(config.modelBaseUrl === undefined ? {} : { baseURL: config.modelBaseUrl }),
      });
    const supervisor = new Supervisor({
      ...(config.instanceId === undefined ? {} : { instanceId: config.instanceId }),
      log,
      broker,
      credentialProxy,
      model,
      loops: options.loops ?? LOOPS,
      leaseTtlMs: config.leaseTtlMs,
      eagerSandbox: config.eagerSandbox,
      workerToolTimeoutMs: config.workerToolTimeoutMs,
      idleLingerMs: config.idleLingerMs,
      logger,
    });
    const bus =
      kafka === undefined
        ? undefined
        : (options.bus ??
          createKafkaBus({
            brokers: config.kafkaBrokers,
            clientId: supervisor.instanceId,
            logger,
            sessionTimeoutMs: config.kafkaSessionTimeoutMs,
            rebalanceTimeoutMs: config.kafkaRebalanceTimeoutMs,
            ...kafka,
          }));
    if (bus !== undefined && options.bus === undefined) cleanups.push(() => bus.close());
    // What serves stops all at once, not in turn: the leases go back first thing (the next
    // brain needs no expiry wait), and neither a rebalance (which held a leave for over 15 s) nor
    // a draining call waits for the others. Each is bounded, so a stop ends within about 2 s.
    const serving: Array<() => Promise<unknown>> = [() => supervisor.stop()];
    cleanups.push(() => Promise.allSettled(serving.map((s) => s())));

    // First: a lease taken before the line is held is covered by its TTL only.
    const line = new LeaseLine(log, supervisor, { wakeFreed: config.wakeFreed }, logger);
    line.start();
    serving.push(() => line.stop());

    const sweeper = new Sweeper(log, supervisor, config.sweepMs, logger);
    sweeper.start();
    serving.push(() => sweeper.stop());

    // Joined in the background: this instance serves Wake and the sweeper from now on, whatever the group does.
    const wakeGroup =
      bus === undefined ? undefined : wakeFromKafka(bus, { topic: config.topic, partitions: config.topicPartitions, groupId: config.consumerGroup }, supervisor, logger);
    if (wakeGroup !== undefined) serving.push(() => wakeGroup.close());

    const server = await startGrpcServer({
      host: config.host,
      port: config.port,
      healthPort: config.healthPort,
      logger,
      credentials: tls.server,
      services: [
        {
          name: "metaharness.v1.Harness",
          definition: HarnessService,
          implementation: {
            wake: guardedUnary("metaharness.v1.Harness/Wake", guard, ROLES, async (req: { sessionId: string; inputLanding?: boolean | undefined }) => {
              const { outcome, holder, readSeq } = await supervisor.wake(req.sessionId, { inputLanding: req.inputLanding === true });
              return { outcome, leaseHolder: holder, readSeq };
            }),
            listActive: guardedUnary("metaharness.v1.Harness/ListActive", guard, ROLES, () =>
              Promise.resolve({ instanceId: supervisor.instanceId, sessions: supervisor.list() }),
            ),
          },
        },
      ],
    });
    serving.push(() => server.shutdown(SERVER_GRACE_MS));
    logger.info(
      { port: server.port, tls: tls.serving, tls_calls: tls.calling, kafka: kafka === undefined ? "off" : kafkaLinkName(kafka), instance: supervisor.instanceId },
      "harness serving",
    );
    return { port: server.port, supervisor, wakeGroup, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
