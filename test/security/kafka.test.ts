/**
 * Kafka beyond a loopback broker: the session log's outbox publishes over TLS with each SASL
 * mechanism a managed cluster offers (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), and a consumer that
 * proves itself with a client certificate instead reads what it published. A wrong password or a
 * broker whose certificate cannot be checked stops no append: the relay says why it cannot
 * publish, keeps the events, and an instance set up right publishes every one of them.
 */
import { readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import type { KafkaSaslMechanism } from "@metaharness/event-bus";
import { readTopic } from "../support/kafka.js";
import { certificateSettings, saslSettings, secureListeners } from "../support/kafka-secure.js";
import { LogCapture } from "../support/log-capture.js";
import { startTestLog, type TestLog } from "../support/session-log.js";
import { userMessage } from "../support/events.js";
import { eventually } from "../support/eventually.js";

const listeners = secureListeners();
let log: TestLog | undefined;
afterEach(async () => {
  await log?.stop();
  log = undefined;
});

async function appendThree(l: TestLog): Promise<string> {
  const { session } = await l.client.createSession({ sessionId: "", metadata: undefined });
  const sessionId = session!.sessionId;
  await l.client.emitEvents({ sessionId, events: [userMessage("one"), userMessage("two"), userMessage("three")] });
  return sessionId;
}

describe("the outbox over TLS with SASL", () => {
  it.each<KafkaSaslMechanism>(["scram-sha-512", "scram-sha-256", "plain"])(
    "publishes with %s; a consumer with a client certificate reads every event",
    async (mechanism) => {
      log = await startTestLog(saslSettings(listeners, mechanism));
      const reader = await readTopic(log.topic, certificateSettings(listeners));
      try {
        const sessionId = await appendThree(log);
        await reader.waitFor((r) => r.filter((x) => x.key === sessionId).length >= 3);
        expect(reader.received.filter((x) => x.key === sessionId).map((x) => x.event.seq)).toEqual([1, 2, 3]);
      } finally {
        await reader.close();
      }
    },
  );
});

describe("a relay that cannot authenticate", () => {
  it.each([
    ["a wrong password", "wrong", /SASL SCRAM SHA512 authentication failed/],
    ["the system's roots, which do not hold the broker's CA", "roots", /certificate/],
  ] as const)("with %s: appends go on, the relay says why, and a relay set up right publishes them", async (_what, fault, why) => {
    const capture = new LogCapture();
    const wrong = join(tmpdir(), `mh-kafka-wrong-${randomBytes(4).toString("hex")}`);
    await writeFile(wrong, "not-the-password\n", { mode: 0o600 });
    const good = saslSettings(listeners, "scram-sha-512");
    const { MH_KAFKA_TLS_CA_FILE: _ca, ...withoutCa } = good;
    const bad = fault === "wrong" ? saslSettings(listeners, "scram-sha-512", wrong) : { ...withoutCa, MH_KAFKA_TLS: "true" };
    log = await startTestLog(bad, { logger: capture.logger("session-log") });

    const sessionId = await appendThree(log);
    // Once the client's own retries are spent (up to 20 s for a broker it cannot connect to).
    const warning = (): Promise<string | undefined> => Promise.resolve(capture.lines.find((l) => l.includes("outbox relay cannot publish")));
    const line = await eventually(warning, "the relay's warning", 40_000);
    expect(line).toMatch(why);
    // The password it tried is not in what it logs.
    for (const l of capture.lines) expect(l).not.toContain(fault === "wrong" ? "not-the-password" : await readFile(listeners.passwordFile, "utf8"));

    // Another instance on the same database, set up right, publishes what the first one could not.
    await log.handle.stop();
    const reader = await readTopic(log.topic, certificateSettings(listeners));
    try {
      await log.startReplica(good);
      await reader.waitFor((r) => r.filter((x) => x.key === sessionId).length >= 3);
      expect(reader.received.filter((x) => x.key === sessionId).map((x) => x.event.seq)).toEqual([1, 2, 3]);
    } finally {
      await reader.close();
      await rm(wrong, { force: true });
    }
  });
});
