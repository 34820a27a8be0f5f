/**
 * The error table of classify.ts, checked against the SDK's own error classes, and the backoff
 * arithmetic: full jitter under a doubling cap, retry-after as a capped floor.
 */
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  AnthropicError,
} from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { backoffMs } from "@metaharness/errors";
import { parseRetryAfter } from "./retry-after.js";
import { toModelError } from "./classify.js";
import { ModelError } from "./model-error.js";
import { withDefaults } from "./options.js";

function httpError(status: number, type: string, headers: Record<string, string> = {}): APIError {
  const body = { type: "error", error: { type, message: `${type} happened` }, request_id: "req_1" };
  return APIError.generate(status, body, undefined, new Headers({ "request-id": "req_1", ...headers }));
}

describe("toModelError", () => {
  it.each([
    [429, "rate_limit_error", "RESOURCE_EXHAUSTED", true, "model_rate_limited_error"],
    [529, "overloaded_error", "UNAVAILABLE", true, "model_overloaded_error"],
    [500, "api_error", "UNAVAILABLE", true, "model_request_failed_error"],
    [503, "api_error", "UNAVAILABLE", true, "model_request_failed_error"],
    [400, "invalid_request_error", "INVALID_ARGUMENT", false, "model_request_failed_error"],
    [401, "authentication_error", "UNAUTHENTICATED", false, "model_request_failed_error"],
    [403, "permission_error", "PERMISSION_DENIED", false, "model_request_failed_error"],
    [404, "not_found_error", "NOT_FOUND", false, "model_request_failed_error"],
    [413, "request_too_large", "INVALID_ARGUMENT", false, "model_request_failed_error"],
    [402, "billing_error", "FAILED_PRECONDITION", false, "model_request_failed_error"],
  ] as const)("maps %i %s to %s", (status, type, code, retryable, errorType) => {
    const err = toModelError(httpError(status, type));
    expect(err).toBeInstanceOf(ModelError);
    expect(err).toMatchObject({ code, status, errorType, requestId: "req_1", apiErrorType: type });
    expect(err.retryable).toBe(retryable);
    expect(err.message).toBe(`model request failed with ${status}: ${type} happened`);
  });

  it("maps an error event mid-stream (no status) by its type", () => {
    const body = { type: "error", error: { type: "overloaded_error", message: "Overloaded" } };
    const err = toModelError(new APIError(undefined, body, undefined, new Headers(), "overloaded_error"));
    expect(err).toMatchObject({ code: "UNAVAILABLE", status: undefined, errorType: "model_overloaded_error" });
    expect(err.retryable).toBe(true);
  });

  it("maps connection failures, timeouts, cut-off streams and aborts", () => {
    expect(toModelError(new APIConnectionError({ cause: new Error("ECONNREFUSED") }))).toMatchObject({ code: "UNAVAILABLE" });
    expect(toModelError(new APIConnectionTimeoutError())).toMatchObject({ code: "DEADLINE_EXCEEDED" });
    expect(toModelError(new AnthropicError("terminated"))).toMatchObject({ code: "UNAVAILABLE" });
    expect(toModelError(new APIUserAbortError())).toMatchObject({ code: "CANCELLED" });
    expect(toModelError(httpError(529, "overloaded_error"), AbortSignal.abort())).toMatchObject({ code: "CANCELLED" });
    const bug = toModelError(new TypeError("x is not a function"));
    expect(bug).toMatchObject({ code: "INTERNAL" });
    expect(bug.retryable).toBe(false);
  });

  it("reads retry-after from the response headers", () => {
    expect(toModelError(httpError(429, "rate_limit_error", { "retry-after": "7" })).retryAfterMs).toBe(7000);
  });
});

describe("backoff", () => {
  const policy = withDefaults({ apiKey: "k", model: "m" }).retry;

  it("draws a full-jitter delay under a doubling, capped ceiling", () => {
    expect([1, 2, 3, 10].map((n) => backoffMs(policy, n, undefined, () => 0.999_999))).toEqual([499, 999, 1999, 19_999]);
    expect(backoffMs(policy, 3, undefined, () => 0)).toBe(0);
  });

  it("waits at least retry-after, but never past the cap", () => {
    expect(backoffMs(policy, 1, 3000, () => 0.5)).toBe(3000);
    expect(backoffMs(policy, 1, 60_000, () => 0.5)).toBe(20_000);
  });

  it("parses retry-after-ms, seconds and HTTP dates", () => {
    expect(parseRetryAfter(new Headers({ "retry-after-ms": "250" }))).toBe(250);
    expect(parseRetryAfter(new Headers({ "retry-after": "1.5" }))).toBe(1500);
    expect(parseRetryAfter(new Headers({ "retry-after": new Date(10_000).toUTCString() }), 4_000)).toBe(6000);
    expect(parseRetryAfter(new Headers({ "retry-after": "soon" }))).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});

describe("options", () => {
  it("applies the documented defaults and rejects bad numbers by name", () => {
    expect(withDefaults({ apiKey: "k", model: "m" }).retry).toMatchObject(policyDefaults());
    expect(() => withDefaults({ apiKey: "k", model: "m", retry: { maxAttempts: 0 } })).toThrow("retry.maxAttempts");
  });
});

function policyDefaults(): { maxAttempts: number; initialIntervalMs: number; maxIntervalMs: number; multiplier: number; jitter: number } {
  return { maxAttempts: 5, initialIntervalMs: 500, maxIntervalMs: 20_000, multiplier: 2, jitter: 1 };
}
