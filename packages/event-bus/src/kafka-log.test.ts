/** kafkajs's log entries land in the BusLogger at the level we mean, with their context. */
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";
import { recordingLogger } from "./collector.testkit.js";
import { kafkaLogCreator } from "./kafka-log.js";

const { logLevel } = kafkajs;

function entry(level: number, namespace: string, message: string, extra: Record<string, unknown> = {}) {
  return { level, namespace, label: "", log: { timestamp: "t", logger: "kafkajs", message, ...extra } };
}

describe("kafkaLogCreator", () => {
  it("keeps consumer errors as errors, downgrades retried attempts, drops the expected warning", () => {
    const logger = recordingLogger();
    const log = kafkaLogCreator(logger)(logLevel.WARN);
    log(entry(logLevel.ERROR, "Consumer", "Crash: boom", { groupId: "g" }));
    log(entry(logLevel.ERROR, "Connection", "Response Metadata(key: 3, version: 6)", { broker: "b:1" }));
    log(entry(logLevel.WARN, "Producer", "Limiting retries for the idempotent producer may invalidate EoS guarantees"));
    log(entry(logLevel.WARN, "Runner", "The group is rebalancing, re-joining"));
    expect(logger.lines).toEqual([
      { level: "error", msg: "kafkajs: Crash: boom", obj: { component: "kafkajs", namespace: "Consumer", groupId: "g" } },
      {
        level: "warn",
        msg: "kafkajs: Response Metadata(key: 3, version: 6)",
        obj: { component: "kafkajs", namespace: "Connection", broker: "b:1" },
      },
      {
        level: "warn",
        msg: "kafkajs: The group is rebalancing, re-joining",
        obj: { component: "kafkajs", namespace: "Runner" },
      },
    ]);
  });
});
