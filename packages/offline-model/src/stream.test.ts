/**
 * Text answers through the real SDK: streamed deltas that arrive paced (first token at ttftMs,
 * the rest at tokensPerSecond), non-streaming create, the beta client's `?beta=true` path, and
 * the default scenario's echo.
 */
import { describe, expect, it } from "vitest";
import { defineScenario } from "./scenario.js";
import { body, post, sdk, useOfflineModel, user } from "./testing.js";

const LONG_TEXT = "The quick brown fox jumps over the lazy dog. ".repeat(8).trim(); // ~359 chars, ~90 tokens
const TTFT_MS = 200;
const TOKENS_PER_SECOND = 300;

const server = useOfflineModel({
  scenarios: [
    defineScenario("long", [{ text: LONG_TEXT }]),
    defineScenario("paced", [{ text: LONG_TEXT, ttftMs: TTFT_MS, tokensPerSecond: TOKENS_PER_SECOND }]),
    defineScenario("two-turns", [{ text: "first answer" }, { text: "second answer" }]),
  ],
});

describe("streaming text", () => {
  it("streams deltas that the SDK assembles into the final message", async () => {
    const client = sdk(server.get());
    const deltas: string[] = [];
    const stream = client.messages.stream(body([user("[scenario:long] go")]));
    stream.on("text", (delta) => deltas.push(delta));
    const message = await stream.finalMessage();

    expect(deltas.length).toBeGreaterThan(10);
    expect(deltas.join("")).toBe(LONG_TEXT);
    expect(message.content).toEqual([{ type: "text", text: LONG_TEXT, citations: null }]);
    expect(message.stop_reason).toBe("end_turn");
    expect(message.id).toMatch(/^msg_01[0-9A-Za-z]{22}$/);
    expect(message.usage.output_tokens).toBe(Math.ceil(LONG_TEXT.length / 4));
    expect(message.usage.input_tokens).toBeGreaterThan(0);
  });

  it("sends the first token at ttftMs and the rest at tokensPerSecond", async () => {
    const client = sdk(server.get());
    const started = performance.now();
    let firstDeltaMs: number | undefined;
    const stream = client.messages.stream(body([user("[scenario:paced] go")]));
    stream.on("text", () => (firstDeltaMs ??= performance.now() - started));
    const message = await stream.finalMessage();
    const totalMs = performance.now() - started;

    const generationMs = (message.usage.output_tokens / TOKENS_PER_SECOND) * 1000; // 300 ms
    // Lower bounds only: the server waits at least this long; how much longer a busy machine
    // takes is not this test's business (timings belong in benchmarks).
    expect(firstDeltaMs).toBeGreaterThanOrEqual(TTFT_MS - 2);
    expect(totalMs).toBeGreaterThanOrEqual(TTFT_MS + generationMs * 0.9);
    // The deltas are spread over the generation, not sent at once after the first token.
    expect(totalMs - (firstDeltaMs ?? totalMs)).toBeGreaterThanOrEqual(generationMs * 0.8);
    // The recorder says when the first delta left the server (benchmarks subtract the model's own TTFT).
    const record = server.get().requests.at(-1);
    expect((record?.firstDeltaAt ?? 0) - (record?.receivedAt ?? Infinity)).toBeGreaterThanOrEqual(TTFT_MS - 2);
    expect(record?.firstDeltaAt).toBeLessThanOrEqual(record?.finishedAt ?? 0);
    // The same two moments on this process's performance clock, between the request's start and
    // the client's first delta (the server runs in this process, as in the turn-cpu benchmark).
    expect((record?.firstDeltaPerf ?? 0) - (record?.receivedPerf ?? Infinity)).toBeGreaterThanOrEqual(TTFT_MS - 1);
    expect(record?.receivedPerf).toBeGreaterThanOrEqual(started);
    expect(record?.firstDeltaPerf).toBeLessThanOrEqual(started + (firstDeltaMs ?? 0));
  });

  it("raw events follow the API's order: message_start, blocks, message_delta, message_stop", async () => {
    const client = sdk(server.get());
    const stream = await client.messages.create({ ...body([user("[scenario:long] go")]), stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types[0]).toBe("message_start");
    expect(types[1]).toBe("content_block_start");
    expect(types.slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    expect(types.filter((t) => t === "content_block_delta").length).toBeGreaterThan(10);
  });
});

describe("non-streaming and beta", () => {
  it("create() returns the whole message, paced like a stream", async () => {
    const client = sdk(server.get());
    const started = performance.now();
    const message = await client.messages.create(body([user("[scenario:paced] go")]));
    const elapsed = performance.now() - started;
    expect(message.content).toEqual([{ type: "text", text: LONG_TEXT, citations: null }]);
    expect(elapsed).toBeGreaterThanOrEqual(TTFT_MS + (message.usage.output_tokens / TOKENS_PER_SECOND) * 900);
  });

  it("picks the step from the assistant turns already in the conversation", async () => {
    const client = sdk(server.get());
    const first = await client.messages.create(body([user("[scenario:two-turns] hi")]));
    const second = await client.messages.create(
      body([user("[scenario:two-turns] hi"), { role: "assistant", content: first.content }, user("and then?")]),
    );
    expect(first.content[0]).toMatchObject({ text: "first answer" });
    expect(second.content[0]).toMatchObject({ text: "second answer" });
  });

  it("serves the beta client, and the `?beta=true` path older SDKs use", async () => {
    const model = server.get();
    const client = sdk(model);
    const message = await client.beta.messages
      .stream({ ...body([user("[scenario:long] go")]), betas: ["context-1m-2025-08-07"] })
      .finalMessage();
    expect(message.content[0]).toMatchObject({ type: "text", text: LONG_TEXT });
    const last = model.requests.at(-1);
    // SDK 1.14 marks beta calls only with the anthropic-beta header; 0.x SDKs added ?beta=true.
    expect(last?.url).toBe("/v1/messages");
    expect(last?.headers["anthropic-beta"]).toContain("context-1m-2025-08-07");

    const raw = await post(model, "/v1/messages?beta=true", body([user("[scenario:long] go")]));
    expect(raw.status).toBe(200);
    expect(raw.json).toMatchObject({ type: "message", content: [{ type: "text", text: LONG_TEXT }] });
  });

  it("echoes the user's last text in the default scenario", async () => {
    const client = sdk(server.get());
    const message = await client.messages.stream(body([user("hello there")])).finalMessage();
    expect(message.content[0]).toMatchObject({ type: "text", text: expect.stringContaining('You said: "hello there"') as unknown });
  });
});
