/**
 * Each way an attempt can fail, as the real SDK surfaces it: the APIError subclass and status for
 * HTTP errors (with retry-after and request-id), APIConnectionError for a dropped connection, a
 * status-less APIError of type overloaded_error for an error event mid-stream, and the SDK's own
 * retries succeeding once failFirst's attempts are used up.
 */
import {
  APIConnectionError,
  APIError,
  AuthenticationError,
  ContentTooLargeError,
  InternalServerError,
  OverloadedError,
  PermissionDeniedError,
  RateLimitError,
} from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { defineScenario, type FailureKind } from "./scenario.js";
import { body, post, sdk, useOfflineModel, user } from "./testing.js";

const kinds: readonly FailureKind[] = [403, 413, 429, 500, 529, "network", "midstream_overloaded"];
const server = useOfflineModel({
  apiKey: "offline",
  scenarios: [
    ...kinds.map((status) =>
      defineScenario(`fail-${status}`, [
        { text: "recovered after the failure, at last", failFirst: { times: 1, status, retryAfterSeconds: 2 } },
      ]),
    ),
    defineScenario("flaky", [{ text: "third time lucky", failFirst: { times: 2, status: 529, retryAfterSeconds: 0.01 } }]),
  ],
});

/** A request unique to the test, so attempt counters of other tests do not interfere. */
function ask(kind: FailureKind | "flaky", nonce: string): ReturnType<typeof body> {
  return body([user(`[scenario:${kind === "flaky" ? "flaky" : `fail-${kind}`}] ${nonce}`)]);
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected the request to fail");
    },
    (err: unknown) => err,
  );
}

describe("HTTP errors", () => {
  it.each([
    [429, RateLimitError, "rate_limit_error"],
    [500, InternalServerError, "api_error"],
    [529, OverloadedError, "overloaded_error"],
    [403, PermissionDeniedError, "permission_error"],
    [413, ContentTooLargeError, "request_too_large"],
  ] as const)("%s surfaces as %o with type %s, then the same request succeeds", async (status, errorClass, type) => {
    const client = sdk(server.get());
    const err = await failure(client.messages.create(ask(status, "http")));
    expect(err).toBeInstanceOf(errorClass);
    const apiError = err as APIError;
    expect(apiError.status).toBe(status);
    expect(apiError.type).toBe(type);
    expect(apiError.requestID).toMatch(/^req_01/);
    if (status === 429 || status === 529) expect(apiError.headers?.get("retry-after")).toBe("2");

    const retried = await client.messages.create(ask(status, "http"));
    expect(retried.content[0]).toMatchObject({ text: "recovered after the failure, at last" });
    const attempts = server.get().requests.filter((r) => r.scenario === `fail-${status}`).map((r) => [r.attempt, r.status]);
    expect(attempts).toEqual([
      [1, status],
      [2, 200],
    ]);
  });

  it("answers 401 to a wrong key and 404 to an unknown route, in the API's shape", async () => {
    const err = await failure(sdk(server.get(), { apiKey: "wrong" }).messages.create(ask(429, "auth")));
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).apiMessage).toBe("invalid x-api-key");

    const missing = await post(server.get(), "/v1/nope", {});
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ type: "error", error: { type: "not_found_error" }, request_id: expect.any(String) as unknown });
  });
});

describe("broken connections and streams", () => {
  it("drops the connection: APIConnectionError", async () => {
    const model = server.get();
    const err = await failure(sdk(model).messages.stream(ask("network", "drop")).finalMessage());
    expect(err).toBeInstanceOf(APIConnectionError);
    expect(model.requests.findLast((r) => r.scenario === "fail-network")?.outcome).toBe("network");
  });

  it("sends an overloaded error event after a few deltas: a status-less APIError", async () => {
    const client = sdk(server.get());
    const deltas: string[] = [];
    const stream = client.messages.stream(ask("midstream_overloaded", "mid"));
    stream.on("text", (d) => deltas.push(d));
    const err = await failure(stream.finalMessage());

    expect(err).toBeInstanceOf(APIError);
    expect(err).not.toBeInstanceOf(InternalServerError);
    const apiError = err as APIError;
    expect(apiError.status).toBeUndefined();
    expect(apiError.type).toBe("overloaded_error");
    expect(apiError.error).toMatchObject({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
    expect(deltas.length).toBe(3);

    const again = await client.messages.stream(ask("midstream_overloaded", "mid")).finalMessage();
    expect(again.content[0]).toMatchObject({ text: "recovered after the failure, at last" });
  });

  it("fails a non-streaming request that was to fail midstream with 529", async () => {
    const err = await failure(sdk(server.get()).messages.create(ask("midstream_overloaded", "json")));
    expect(err).toBeInstanceOf(OverloadedError);
  });
});

describe("the SDK's own retries", () => {
  it("resends after retry-after and succeeds once failFirst is used up", async () => {
    const model = server.get();
    const message = await sdk(model, { maxRetries: 2 }).messages.create(ask("flaky", "sdk-retries"));
    expect(message.content[0]).toMatchObject({ text: "third time lucky" });
    const tries = model.requests.filter((r) => r.scenario === "flaky");
    expect(tries.map((r) => [r.attempt, r.status, r.headers["x-stainless-retry-count"]])).toEqual([
      [1, 529, "0"],
      [2, 529, "1"],
      [3, 200, "2"],
    ]);
  });
});
