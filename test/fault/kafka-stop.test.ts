/**
 * Kafka stopped for 30 s mid-turn (the test's own broker, own-kafka.ts, never the shared one), then
 * started again on the same ports and data. Meanwhile the harnesses live on (their wake group
 * waits in the background), turns run on (the orphan sweeper finds the work Kafka would have
 * announced) and the session log keeps appending (its outbox holds what it cannot publish). After,
 * every session is whole, and every event of it reached the topic. Prints how many turns ran in
 * the outage and how long the outbox took to drain once Kafka was back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTopic } from "../support/kafka.js";
import { startFaultStack, toolSteps, turnsMidTool, type FaultStack } from "../support/fault-stack.js";
import { startOwnKafka, type OwnKafka } from "../support/own-kafka.js";
import { recovery, turnEnded, wholeness } from "../support/whole-session.js";

const OUTAGE_MS = 30_000;
const STEPS = 4;
let kafka: OwnKafka;
let stack: FaultStack;
beforeAll(async () => {
  kafka = await startOwnKafka();
  stack = await startFaultStack({ harnesses: 2, kafkaBrokers: kafka.brokers, scenarios: [toolSteps("work", STEPS, 0.5)] });
}, 240_000);
afterAll(async () => {
  await stack?.stop();
  await kafka?.dispose();
});

describe("Kafka stopped for 30 s", () => {
  it("turns go on without it, every service lives, and every event reaches the topic afterwards", async () => {
    const before = await turnsMidTool(stack, 3, "[scenario:work] go");
    await kafka.stop();
    const stoppedAt = Date.now();
    // Turns during the outage: the ones under way end, and a new session's turn runs whole.
    const during = await stack.createSession();
    await stack.send(during, "[scenario:work] while Kafka is down");
    const inOutage = [...before.keys(), during];
    await Promise.all(inOutage.map((id) => stack.waitFor(id, (e) => turnEnded(e), OUTAGE_MS - 5_000)));
    const turnsDoneAt = Date.now() - stoppedAt;
    // A fixed wait on purpose (paces the fault): Kafka stays down the whole OUTAGE_MS.
    await new Promise((r) => setTimeout(r, OUTAGE_MS - (Date.now() - stoppedAt)));
    const down = [stack.log, stack.broker, stack.proxy, ...stack.harnesses].filter((s) => !s.running()).map((s) => s.name);
    await kafka.start();
    const startedAt = Date.now();

    // A second turn of each session after Kafka is back: woken as usual.
    const all = new Map<string, number>();
    for (const id of inOutage) {
      all.set(id, (await stack.events(id)).length);
      await stack.send(id, "[scenario:work] again");
    }
    const { sessions } = await recovery(stack, all, startedAt, 60_000, (e) => turnEnded(e, 2));
    const { problems, figures } = await wholeness(sessions, stack.brokerDbUrl);

    const topic = await readTopic(stack.topic, { MH_KAFKA_BROKERS: kafka.brokers });
    try {
      const seqs = (id: string) => [...new Set(topic.received.filter((r) => r.key === id).map((r) => r.event.seq))].sort((a, b) => a - b);
      await topic.waitFor(() => [...sessions].every(([id, events]) => seqs(id).length >= events.length), 60_000);
      const drained = Date.now() - startedAt;
      process.stdout.write(
        `  kafka: down ${OUTAGE_MS} ms; the ${inOutage.length} turns under way or begun in the outage ended ${turnsDoneAt} ms into it; ` +
          `every event on the topic ${drained} ms after Kafka was back; ${figures.toolUses} tool uses, ${figures.errors} session.error\n`,
      );
      for (const [id, events] of sessions) expect({ id, seqs: seqs(id) }).toEqual({ id, seqs: events.map((e) => e.seq) });
    } finally {
      await topic.close();
    }
    expect(down).toEqual([]);
    expect(problems).toEqual([]);
  }, 300_000);
});
