/**
 * The SDK's pattern is to open a session's event stream, then send: once
 * `sessions.events.stream()` resolved (the response's headers arrived), every event appended
 * after it must come on the stream. A stream from now starts at the session's head, which the
 * log finds when the watch reaches it (WatchEventsRequest.from_head): the headers must not go
 * out before that, or an event appended in between is behind the head and never sent. The
 * gateway's call to the log is held in a proxy to put the watch "sent, not yet arrived" for as
 * long as the test needs.
 */
import Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, KEY_A, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";
import { userMessage } from "../../support/events.js";
import { startPausableProxy } from "../../support/pausable-proxy.js";

let stack: Stack;
let agentId: string;
let environmentId: string;

beforeAll(async () => {
  stack = await startStack({ scenarios: [defineScenario("hello", [{ text: "Hello." }], { onExhausted: "repeat-last" })], vault: false });
  const a = stack.client().sdk;
  agentId = (await a.beta.agents.create({ name: "greeter", model: "claude-sonnet-5-5", system: "[scenario:hello] You greet." })).id;
  environmentId = (await a.beta.environments.create({ name: "env" })).id;
});
afterAll(async () => {
  await stack?.stop();
});

/** Whether `p` settles within `ms` (a bound on something that must not happen, never a wait for what must). */
const settlesWithin = (p: Promise<unknown>, ms: number): Promise<boolean> =>
  Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
  ]);

describe("an event stream from now", () => {
  it("sends every event appended after stream() resolved, however late its watch reaches the log", async () => {
    const proxy = await startPausableProxy(stack.brain.log.reach("admin")["MH_SESSION_LOG_ADDR"]!);
    const texts: string[] = [];
    let stream: Awaited<ReturnType<Anthropic["beta"]["sessions"]["events"]["stream"]>> | undefined;
    try {
      const gw = await stack.anotherGateway({ MH_SESSION_LOG_ADDR: proxy.address });
      const sdk = new Anthropic({ apiKey: KEY_A, baseURL: gw.url, maxRetries: 0 });
      const sessionId = (await sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId })).id;
      const append = (text: string): Promise<unknown> => stack.brain.log.client.emitEvent({ sessionId, event: userMessage(text) });

      proxy.pause();
      const opening = sdk.beta.sessions.events.stream(sessionId);
      // The gateway's call to the log is on its way (held here).
      await eventually(() => Promise.resolve(proxy.heldBytes() > 0 ? true : undefined), "the gateway's call to the log, held");
      if (await settlesWithin(opening, 2000)) {
        // The stream opened before its watch reached the log: what is appended now is after it.
        stream = await opening;
        await append("after the stream opened");
        proxy.resume();
      } else {
        proxy.resume();
        stream = await opening;
        await append("after the stream opened");
      }
      const reading = (async () => {
        for await (const event of stream) {
          if (event.type === "user.message") texts.push(event.content.map((b) => (b.type === "text" ? b.text : "")).join(""));
        }
      })().catch(() => undefined);
      // Probes until one arrives: the stream is live by then, and whatever came after the open came first.
      await eventually(async () => {
        if (texts.includes("probe")) return true;
        await append("probe");
        return undefined;
      }, () => `a probe on the stream (got ${JSON.stringify(texts)})`);
      expect(texts[0]).toBe("after the stream opened");
      stream.controller.abort();
      await reading;
    } finally {
      stream?.controller.abort();
      proxy.resume();
      await proxy.close();
    }
  });
});
