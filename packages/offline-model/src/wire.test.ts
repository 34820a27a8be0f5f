/**
 * Keeps our wire shapes in step with the official SDK's types: a message and every stream event
 * this server writes must be assignable to what the SDK declares it parses (checked by tsc -b).
 */
import type Anthropic from "@anthropic-ai/sdk";
import { describe, expectTypeOf, it } from "vitest";
import type { ErrorBody } from "./api-error.js";
import type { Message, StreamEvent } from "./wire.js";

describe("wire types", () => {
  it("match the SDK's", () => {
    expectTypeOf<Message>().toExtend<Anthropic.Message>();
    expectTypeOf<Exclude<StreamEvent, { type: "ping" }>>().toExtend<Anthropic.RawMessageStreamEvent>();
    expectTypeOf<Omit<ErrorBody, "error">>().toExtend<Omit<Anthropic.ErrorResponse, "error">>();
  });
});
