/**
 * The real session-log service for a benchmark: started in-process on port 0 on a fresh database
 * (test/support/session-log.ts), reached through real gRPC, with the realistic event the
 * benchmarks append. Stopping also deletes the run's Kafka topic, so runs do not pile topics up.
 */
import kafkajs from "kafkajs";
import type { Event } from "@metaharness/proto";
import { agentMessage } from "../../support/events.js";
import { KAFKA_BROKERS, startTestLog, type LogClient, type TestLog } from "../../support/session-log.js";

/** ~200 characters of text: the size of a short agent message, used by every benchmark. */
export const EVENT_TEXT =
  "I read the failing test and the stack trace points at the retry loop in the client: the backoff " +
  "never resets after a success. I will patch it, add a regression test and run the suite again.";

export function benchEvent(): Event {
  return agentMessage(EVENT_TEXT);
}

export interface BenchLog {
  readonly log: TestLog;
  readonly client: LogClient;
  newSessions(count: number): Promise<string[]>;
  stop(): Promise<void>;
}

export async function startBenchLog(env: Record<string, string> = {}): Promise<BenchLog> {
  const log = await startTestLog(env);
  return {
    log,
    client: log.client,
    async newSessions(count) {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const { session } = await log.client.createSession({ sessionId: "", metadata: undefined });
        if (session === undefined) throw new Error("CreateSession returned no session");
        ids.push(session.sessionId);
      }
      return ids;
    },
    async stop() {
      await log.stop();
      await deleteTopic(log.topic);
    },
  };
}

async function deleteTopic(topic: string): Promise<void> {
  const kafka = new kafkajs.Kafka({
    clientId: "bench-cleanup",
    brokers: KAFKA_BROKERS.split(","),
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const topics = await admin.listTopics();
    if (topics.includes(topic)) await admin.deleteTopics({ topics: [topic], timeout: 10_000 });
  } catch {
    // Best effort: a leftover topic only costs disk space on the local broker.
  } finally {
    await admin.disconnect();
  }
}
