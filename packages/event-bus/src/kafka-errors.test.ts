/** What a caller sees when kafkajs fails: the MhError code, found through kafkajs's wrappers. */
import { MhError } from "@metaharness/errors";
import { describe, expect, it } from "vitest";
import { toMhError } from "./kafka-errors.js";

/** Shaped like kafkajs's errors (its classes are not importable by name from ESM). */
function kafkaError(name: string, message: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), { name, ...extra });
}

describe("toMhError", () => {
  it("makes a connection failure UNAVAILABLE, keeping the cause and saying what failed", () => {
    const cause = kafkaError("KafkaJSNumberOfRetriesExceeded", "Connection error: connect ECONNREFUSED", {
      cause: kafkaError("KafkaJSConnectionError", "Connection error: connect ECONNREFUSED"),
    });
    const err = toMhError(cause, "publish");
    expect(err).toMatchObject({ code: "UNAVAILABLE", retryable: true, cause });
    expect(err.message).toBe("kafka: publish failed: Connection error: connect ECONNREFUSED");
  });

  it("finds a protocol error type through causes and aggregates", () => {
    const unknownTopic = kafkaError("KafkaJSProtocolError", "no such topic", { type: "UNKNOWN_TOPIC_OR_PARTITION" });
    const wrapped = kafkaError("KafkaJSNumberOfRetriesExceeded", "no such topic", { cause: unknownTopic });
    expect(toMhError(wrapped, "publish")).toMatchObject({
      code: "NOT_FOUND",
      details: { kafka_error: "UNKNOWN_TOPIC_OR_PARTITION" },
    });
    const tooLarge = kafkaError("KafkaJSProtocolError", "too large", { type: "MESSAGE_TOO_LARGE" });
    const aggregate = kafkaError("KafkaJSAggregateError", "several", { errors: [tooLarge] });
    expect(toMhError(aggregate, "publish").code).toBe("INVALID_ARGUMENT");
    const denied = kafkaError("KafkaJSProtocolError", "denied", { type: "TOPIC_AUTHORIZATION_FAILED" });
    expect(toMhError(denied, "publish").code).toBe("PERMISSION_DENIED");
  });

  it("passes an MhError through and copes with non-errors", () => {
    const own = new MhError("FAILED_PRECONDITION", "closed");
    expect(toMhError(own, "publish")).toBe(own);
    expect(toMhError("boom", "publish")).toMatchObject({ code: "UNAVAILABLE", message: "kafka: publish failed: boom" });
  });
});
