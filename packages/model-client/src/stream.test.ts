/**
 * streamMessage against the offline model (real SDK, real HTTP): text arrives through the hooks as
 * it streams, tool input through onToolUseStart/onInputJsonDelta, thinking through
 * onThinkingDelta, and ttftMs measures the time to the first delta.
 */
import { defineScenario } from "@metaharness/offline-model";
import { beforeAll, describe, expect, it } from "vitest";
import { ask, client, useOfflineModel } from "./testing.js";

const TEXT = "Streaming is how the harness shows progress while the model is still writing.";
const server = useOfflineModel([
  defineScenario("text", [{ text: TEXT, ttftMs: 120, tokensPerSecond: 400 }]),
  defineScenario("tool", [{ text: "Checking.", toolUses: [{ name: "bash", input: { command: "ls -la /tmp", timeout_s: 30 } }] }]),
  defineScenario("think", [{ thinking: "Plan: greet, then stop.", text: "Hello." }]),
]);

// A process's first SDK request pays ~70-100 ms of one-off setup (undici, the SDK's lazy
// imports); warm up so the TTFT assertion measures the model, not the cold start.
beforeAll(async () => {
  await client(server.get()).streamMessage(ask("think", "warm-up"));
});

const bash = { name: "bash", description: "Run a command", input_schema: { type: "object" as const, properties: {} } };

describe("streamMessage", () => {
  it("delivers text deltas as they stream and measures time to first token", async () => {
    const deltas: Array<[string, number, number]> = [];
    const started = performance.now();
    const result = await client(server.get()).streamMessage(ask("text"), {
      onTextDelta: (text, index) => deltas.push([text, index, performance.now() - started]),
    });
    const ended = performance.now() - started;

    expect(deltas.map(([t]) => t).join("")).toBe(TEXT);
    expect(deltas.every(([, index]) => index === 0)).toBe(true);
    expect(deltas[0]?.[2]).toBeLessThan(ended - 20); // the first delta came well before the end
    expect(result.ttftMs).toBeGreaterThanOrEqual(118);
    // The first delta's time, not the whole stream's: no wall-clock bound, which a loaded machine breaks.
    expect(result.ttftMs).toBeLessThanOrEqual(deltas[0]?.[2] ?? 0);
    expect(result.attempts).toBe(1);
    expect(result.message.content).toEqual([{ type: "text", text: TEXT, citations: null }]);
    expect(result.message.model).toBe("claude-offline-test");
  });

  it("assembles tool input from input_json_delta", async () => {
    const starts: Array<[string, string, number]> = [];
    const partials: string[] = [];
    const texts: number[] = [];
    const result = await client(server.get()).streamMessage(
      { ...ask("tool"), tools: [bash] },
      {
        onToolUseStart: (id, name, index) => starts.push([id, name, index]),
        onInputJsonDelta: (partial) => partials.push(partial),
        onTextDelta: (_t, index) => texts.push(index),
      },
    );
    const use = result.message.content[1];
    expect(use).toMatchObject({ type: "tool_use", name: "bash", input: { command: "ls -la /tmp", timeout_s: 30 } });
    expect(starts).toEqual([[use?.type === "tool_use" ? use.id : "", "bash", 1]]);
    expect(JSON.parse(partials.join(""))).toEqual({ command: "ls -la /tmp", timeout_s: 30 });
    expect(new Set(texts)).toEqual(new Set([0]));
    expect(result.message.stop_reason).toBe("tool_use");
  });

  it("delivers thinking deltas when thinking is on", async () => {
    const thoughts: string[] = [];
    const result = await client(server.get()).streamMessage(
      { ...ask("think"), thinking: { type: "enabled", budget_tokens: 1024 } },
      { onThinkingDelta: (t) => thoughts.push(t) },
    );
    expect(thoughts.join("")).toBe("Plan: greet, then stop.");
    expect(result.message.content.map((b) => b.type)).toEqual(["thinking", "text"]);
  });

  it("lets an exception thrown by a hook propagate unchanged, without retrying", async () => {
    const model = server.get();
    const before = model.requests.length;
    const mistake = new RangeError("the caller's own bug");
    const pending = client(model).streamMessage(ask("text", "hook-throws"), {
      onTextDelta: () => {
        throw mistake;
      },
    });
    await expect(pending).rejects.toBe(mistake);
    expect(model.requests.length - before).toBe(1);
  });

  it("uses the request's model and max_tokens over the defaults", async () => {
    const model = server.get();
    await client(model).streamMessage({ ...ask("think", "override"), model: "claude-other", max_tokens: 99 });
    expect(model.requests.at(-1)?.body).toMatchObject({ model: "claude-other", max_tokens: 99, stream: true });
  });
});
