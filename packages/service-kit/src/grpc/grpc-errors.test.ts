import { status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { messageSizeLimit } from "./grpc-errors.js";

describe("messageSizeLimit", () => {
  it("reads the limit from each of grpc-js's size refusals", () => {
    const said = [
      ["Received message larger than max (20971525 vs 16777216)", 16777216],
      ["Sent message larger than max (9 vs. 4)", 4],
      ["Received message that decompresses to a size larger than 4194304", 4194304],
      ["Attempted to send message with a size larger than 1024", 1024],
    ] as const;
    for (const [message, limit] of said) expect(messageSizeLimit(status.RESOURCE_EXHAUSTED, message), message).toBe(limit);
  });

  it("leaves other RESOURCE_EXHAUSTED and other codes alone", () => {
    expect(messageSizeLimit(status.RESOURCE_EXHAUSTED, "10000 writes are already waiting; try again shortly")).toBeUndefined();
    expect(messageSizeLimit(status.INTERNAL, "Received message larger than max (5 vs 4)")).toBeUndefined();
  });
});
