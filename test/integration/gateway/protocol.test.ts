/**
 * The protocol around the resources, as the SDK meets it: authentication and its error body,
 * the anthropic-beta header, unknown routes, endpoints not yet served (501), body limits, empty
 * JSON bodies, the stream limit per tenant, heartbeats, request ids.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, raw, startStack, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    scenarios: [],
    env: { MH_GATEWAY_BODY_LIMIT_BYTES: "4096", MH_GATEWAY_MAX_STREAMS_PER_TENANT: "1" },
  });
});
afterAll(async () => {
  await stack?.stop();
});

describe("authentication", () => {
  it("answers a missing or unknown key with 401 and the Anthropic error body", async () => {
    const missing = await raw(stack, "GET", "/v1/agents", { key: null });
    expect(missing.status).toBe(401);
    expect(missing.json).toEqual({
      type: "error",
      error: { type: "authentication_error", message: "x-api-key header is required" },
      request_id: missing.headers.get("request-id"),
    });
    expect(missing.headers.get("request-id")).toMatch(/^req_/);

    const sdk = stack.client("not-a-key-of-this-gateway").sdk;
    const err = await sdk.beta.agents.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((err as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ error: { type: "authentication_error", message: "invalid x-api-key" } });
  });

  it("accepts the key as a bearer token (the SDK's authToken)", async () => {
    const sdk = new Anthropic({ authToken: KEY_A, apiKey: null, baseURL: stack.gateway.url });
    expect((await sdk.beta.agents.list()).data).toEqual([]);
  });
});

describe("the anthropic-beta header", () => {
  it("serves the SDK's header, and a request without one", async () => {
    expect((await raw(stack, "GET", "/v1/agents", { headers: { "anthropic-beta": "managed-agents-2026-04-01,files-api-2025-04-14" } })).status).toBe(200);
    expect((await raw(stack, "GET", "/v1/agents")).status).toBe(200);
  });

  it("refuses a Managed Agents version it does not implement", async () => {
    const res = await raw(stack, "GET", "/v1/agents", { headers: { "anthropic-beta": "managed-agents-2099-01-01" } });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ error: { type: "invalid_request_error", message: expect.stringMatching(/^anthropic-beta: /) as unknown } });
  });
});

describe("errors", () => {
  it("answers unknown routes with 404 not_found_error", async () => {
    const res = await raw(stack, "GET", "/v1/nothing-here");
    expect(res.status).toBe(404);
    expect(res.json).toMatchObject({ type: "error", error: { type: "not_found_error" } });
  });

  it("keeps every thread route behind the key", async () => {
    expect((await raw(stack, "GET", "/v1/sessions/sesn_x/threads", { key: null })).status).toBe(401);
  });

  it("answers an oversized body with 413 request_too_large, and bad JSON with 400", async () => {
    const big = await raw(stack, "POST", "/v1/agents", { body: JSON.stringify({ name: "x".repeat(5000), model: "m" }) });
    expect(big.status).toBe(413);
    expect(big.json).toMatchObject({ error: { type: "request_too_large" } });
    const bad = await raw(stack, "POST", "/v1/agents", { body: "{not json" });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ error: { type: "invalid_request_error" } });
  });

  it("takes an empty JSON body as no body (the Python SDK's archive and delete send one)", async () => {
    const agent = (await raw(stack, "POST", "/v1/agents", { body: JSON.stringify({ name: "empty", model: "m" }) })).json as { id: string };
    const archived = await raw(stack, "POST", `/v1/agents/${agent.id}/archive`, { body: "" });
    expect([archived.status, (archived.json as { archived_at: unknown }).archived_at]).toEqual([200, expect.any(String)]);
    const vault = (await raw(stack, "POST", "/v1/vaults", { body: JSON.stringify({ display_name: "v" }) })).json as { id: string };
    expect((await raw(stack, "DELETE", `/v1/vaults/${vault.id}`, { body: "" })).status).toBe(200);
    // A route that needs a body still says so.
    const none = await raw(stack, "POST", "/v1/agents", { body: "" });
    expect([none.status, none.json]).toMatchObject([400, { error: { type: "invalid_request_error" } }]);
  });

  it("names bad query parameters and cursors", async () => {
    const sdk = stack.client().sdk;
    const limit = await sdk.beta.agents.list({ limit: 1000 }).catch((e: unknown) => e as InstanceType<typeof Anthropic.APIError>);
    expect((limit as InstanceType<typeof Anthropic.APIError>).apiMessage).toMatch(/^limit: /);
    const page = await sdk.beta.agents.list({ page: "garbage" }).catch((e: unknown) => e as InstanceType<typeof Anthropic.APIError>);
    expect((page as InstanceType<typeof Anthropic.APIError>).apiMessage).toMatch(/^page: /);
    const when = await raw(stack, "GET", "/v1/agents?created_at%5Bgte%5D=yesterday");
    expect(when.json).toMatchObject({ error: { message: expect.stringMatching(/^created_at\[gte\]: /) as unknown } });
  });
});

describe("event streams", () => {
  it("sends heartbeats, limits open streams per tenant, and frees the slot when the client leaves", async () => {
    const sdk = stack.client(KEY_A, { maxRetries: 0 }).sdk;
    const agent = await sdk.beta.agents.create({ name: "a", model: "claude-sonnet-5-5" });
    const env = await sdk.beta.environments.create({ name: "e" });
    const session = await sdk.beta.sessions.create({ agent: agent.id, environment_id: env.id });

    const controller = new AbortController();
    const res = await fetch(`${stack.gateway.url}/v1/sessions/${session.id}/events/stream`, {
      headers: { "x-api-key": KEY_A },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes("event: ping\n")) {
      const chunk = (await reader.read()).value as Uint8Array | undefined;
      text += new TextDecoder().decode(chunk);
    }
    expect(text).toContain('data: {"type":"ping"}');

    const second = await sdk.beta.sessions.events.stream(session.id).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(Anthropic.RateLimitError);

    controller.abort();
    await eventually(
      async () => {
        const again = await sdk.beta.sessions.events.stream(session.id).catch((e: unknown) => e);
        if (again instanceof Anthropic.RateLimitError) return undefined;
        (again as { controller: AbortController }).controller.abort();
        return true;
      },
      "the stream slot to be freed",
      5000,
    );
  });

  it("refuses a resume point beyond the session's last event", async () => {
    const sdk = stack.client().sdk;
    const agent = await sdk.beta.agents.create({ name: "a", model: "claude-sonnet-5-5" });
    const env = await sdk.beta.environments.create({ name: "e" });
    const session = await sdk.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const res = await raw(stack, "GET", `/v1/sessions/${session.id}/events/stream`, { headers: { "last-event-id": "42" } });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ error: { message: expect.stringMatching(/^Last-Event-ID: /) as unknown } });
  });
});

describe("a backend down", () => {
  // Last in this file: it stops the session log.
  it("is a 503 overloaded_error, which the SDK retries, without the backend's own message", async () => {
    const counting = stack.client(KEY_A, { maxRetries: 1 });
    const sdk = counting.sdk;
    const agent = await sdk.beta.agents.create({ name: "a", model: "claude-sonnet-5-5" });
    const env = await sdk.beta.environments.create({ name: "e" });
    const session = await sdk.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    await stack.brain.log.stop();

    const before = counting.requests();
    const err = await sdk.beta.sessions.retrieve(session.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    const apiError = err as InstanceType<typeof Anthropic.APIError>;
    expect(apiError.status).toBe(503);
    expect(apiError.error).toMatchObject({ type: "error", error: { type: "overloaded_error", message: "A service behind the gateway is unavailable; retry shortly." } });
    expect(counting.requests() - before).toBe(2);
    // What needs only the gateway's own database still works.
    expect((await sdk.beta.agents.retrieve(agent.id)).id).toBe(agent.id);
  });
});
