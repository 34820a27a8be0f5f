/**
 * keepSubscribed over Kafka: a group membership kept in the background, so that a process that
 * also serves something else (a harness serves Wake and sweeps orphans) starts serving at once
 * and never exits because its group is slow. A restarted harness used to wait in subscribe() for
 * the join, 29-32 s while the group waited for the member killed before it, and exited when the
 * join outran its 30 s timeout (issue 25).
 *
 * One attempt is one kafkajs consumer from connect until it stops for good; kafkajs itself
 * restarts it after retriable crashes and rejoins after rebalances. What it gives up on (a
 * connect that fails its retries, a crash it will not restart) ends the attempt, and the next
 * one starts after a capped, jittered backoff, for as long as the membership is open.
 */
import { backoffMs, retryPolicy } from "@metaharness/errors";
import type { Consumer, Kafka } from "kafkajs";
import { deliverTo, disconnectWithin, kafkaMember } from "./kafka-consumer.js";
import { toMhError } from "./kafka-errors.js";
import type { KafkaBusConfig } from "./kafka-options.js";
import { endPositions, seekToStart, type StartPositions } from "./kafka-positions.js";
import type { BusSubscription, KeepSubscribedOptions, TopicSpec } from "./types.js";

/** Backoff between attempts: from the bus's initial retry time, doubling, capped here. */
const MAX_ATTEMPT_BACKOFF_MS = 10_000;
/** After the first failure, failures are logged every this many. */
const LOG_EVERY = 10;

export class KafkaMembership implements BusSubscription {
  private member: Consumer | undefined;
  private closing: Promise<void> | undefined;
  private readonly closed: Promise<"closed">;
  private signalClosed: () => void = () => undefined;
  private everJoined = false;
  joined = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly config: KafkaBusConfig,
    private readonly options: KeepSubscribedOptions,
    private readonly ensure: (topics: readonly TopicSpec[]) => Promise<void>,
    private readonly onClosed: () => void,
  ) {
    this.closed = new Promise((resolve) => (this.signalClosed = () => resolve("closed")));
    void this.keep();
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.signalClosed();
      this.joined = false;
      if (this.member !== undefined) await disconnectWithin(this.member, this.config, this.options.groupId);
    })().finally(this.onClosed);
    return this.closing;
  }

  private async keep(): Promise<void> {
    const { config, options } = this;
    // From the bus's first retry time, doubling up to 10 s, 40% jittered; for as long as it is open.
    const policy = retryPolicy({
      initialIntervalMs: config.retry.initialRetryTime,
      maxIntervalMs: MAX_ATTEMPT_BACKOFF_MS,
      jitter: 0.4,
      maxAttempts: Number.POSITIVE_INFINITY,
    });
    for (let failures = 0; this.closing === undefined; ) {
      const error = await this.attempt().catch((err: unknown) => err);
      if (this.closing !== undefined) return;
      failures += 1;
      if (failures === 1 || failures % LOG_EVERY === 0) {
        const err = toMhError(error, `keep group ${options.groupId}`);
        config.logger.warn({ err, groupId: options.groupId, failures }, "event-bus: group membership failed; trying again");
      }
      await this.pause(backoffMs(policy, failures));
    }
  }

  /** One consumer's life; resolves with why it ended (closing resolves it at once). */
  private async attempt(): Promise<unknown> {
    const { config, options } = this;
    if (options.ensure !== undefined) await this.ensure(options.ensure);
    let positions: StartPositions =
      options.fromBeginning === true ? new Map() : await endPositions(this.kafka, config, options.groupId, options.topics);
    if (this.closing !== undefined) return undefined;
    const member = kafkaMember(this.kafka, config, options.groupId);
    this.member = member;
    const { GROUP_JOIN, REBALANCING, CRASH } = member.events;
    const stopped = new Promise<unknown>((resolve) => {
      member.on(GROUP_JOIN, (e) => {
        // Emitted inside the join, before the first fetch: a seek here applies to it.
        seekToStart(member, e.payload.memberAssignment, positions);
        positions = new Map(); // only the first join; later ones resume from commits
        this.joined = true;
        const first = !this.everJoined;
        this.everJoined = true;
        options.onJoined?.({ durationMs: e.payload.duration, first });
      });
      member.on(REBALANCING, () => (this.joined = false));
      member.on(CRASH, (e) => {
        this.joined = false;
        if (!e.payload.restart) resolve(e.payload.error);
      });
    });
    try {
      await member.connect();
      await member.subscribe({ topics: [...options.topics], fromBeginning: options.fromBeginning ?? false });
      // run() waits for the first join, which may take the session timeout of a dead member: not awaited.
      member.run({ autoCommit: true, eachMessage: deliverTo(options, config) }).catch(() => undefined);
      return await Promise.race([stopped, this.closed]);
    } finally {
      if (this.closing === undefined) {
        this.joined = false;
        await disconnectWithin(member, config, options.groupId);
      }
    }
  }

  private async pause(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise((resolve) => (timer = setTimeout(resolve, ms))), this.closed]);
    clearTimeout(timer);
  }
}
