/**
 * The events tests' fixture (gateway/events*.test.ts): a stack with the offline model's scenarios
 * they share, the SDK twice (as a user builds it, and asking for our additions: events carry their
 * seq), and the steps they repeat: a session of a scenario, a user message, the stored events, an
 * SDK stream read in steps, a session paused on its custom tool.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { BetaManagedAgentsStreamSessionEvents } from "@anthropic-ai/sdk/resources/beta/sessions/events";
import { defineScenario } from "@metaharness/offline-model";
import { startStack, type Stack } from "./gateway.js";

const SCENARIOS = [
  defineScenario("hello", [{ text: "Hello from the offline model." }], { onExhausted: "repeat-last" }),
  defineScenario("slow", [{ text: "word ".repeat(40), ttftMs: 50, tokensPerSecond: 200 }], { onExhausted: "repeat-last" }),
  defineScenario("endless", [{ text: "word ".repeat(2000), ttftMs: 20, tokensPerSecond: 100 }], { onExhausted: "repeat-last" }),
  defineScenario("weather", [
    { text: "Let me look that up.", toolUses: [{ name: "get_weather", input: { city: "Paris" } }] },
    (ctx) => ({ text: `The weather: ${ctx.lastToolResult?.content ?? "?"}` }),
  ]),
  defineScenario(
    "weather-again",
    [{ text: "Let me look that up.", toolUses: [{ name: "get_weather", input: { city: "Paris" } }] }, (ctx) => ({ text: `The weather: ${ctx.lastToolResult?.content ?? "?"}` })],
    { onExhausted: "repeat-last" },
  ),
  defineScenario("echo", [(ctx) => ({ text: `heard: ${ctx.lastUserText}` })], { onExhausted: "repeat-last" }),
  defineScenario("ask", [
    { toolUses: [{ name: "bash", input: { command: "rm -rf /tmp/x" } }] },
    (ctx) => ({ text: `tool said: ${ctx.lastToolResult?.content ?? "?"}` }),
  ]),
];

export type StreamEvent = BetaManagedAgentsStreamSessionEvents;
type EventParams = Anthropic.Beta.Sessions.BetaManagedAgentsEventParams;

export const seqOf = (e: StreamEvent): number | undefined => (e as { seq?: number }).seq;
export const isIdle = (e: StreamEvent): boolean => e.type === "session.status_idle";

export type Reader = (done: (e: StreamEvent, all: StreamEvent[]) => boolean) => Promise<StreamEvent[]>;

/**
 * Reads an SDK stream in steps: each call reads until `done` holds for an event (inclusive).
 * The SDK's Stream can be iterated once only, and leaving a for-await loop aborts it, so the one
 * iterator is kept across calls.
 */
export function reader(stream: AsyncIterable<StreamEvent>): Reader {
  const it = stream[Symbol.asyncIterator]();
  return async (done) => {
    const seen: StreamEvent[] = [];
    for (;;) {
      const next = await it.next();
      if (next.done === true) return seen;
      seen.push(next.value);
      if (done(next.value, seen)) return seen;
    }
  };
}

export const WEATHER_TOOL: NonNullable<Anthropic.Beta.AgentCreateParams["tools"]> = [
  { type: "custom", name: "get_weather", description: "weather", input_schema: { type: "object", properties: { city: { type: "string" } } } },
];

/** A user.custom_tool_result answering `id` with `text`. */
export const result = (id: string, text: string): EventParams => ({
  type: "user.custom_tool_result",
  custom_tool_use_id: id,
  content: [{ type: "text", text }],
});

export interface EventsStack {
  readonly stack: Stack;
  readonly sdk: Anthropic;
  /** The SDK asking for our additions (MH-Extensions: true): events carry their seq. */
  readonly ext: Anthropic;
  /** A new session of an agent whose system prompt names `scenario`, with `tools`. */
  readonly sessionFor: (scenario: string, tools?: Anthropic.Beta.AgentCreateParams["tools"]) => Promise<string>;
  /** Sends a user.message. */
  readonly say: (sessionId: string, text: string) => Promise<unknown>;
  /** Every stored event, as `client` (default: sdk) lists them. */
  readonly allEvents: (sessionId: string, client?: Anthropic) => Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[]>;
  /** A weather session paused on its custom tool use, and that event as served. */
  readonly pausedOnCustomTool: (scenario?: string) => Promise<{ sessionId: string; use: Anthropic.Beta.Sessions.BetaManagedAgentsAgentCustomToolUseEvent }>;
  /** The message of the 400 a send of `events` gets (fails the test if it gets none). */
  readonly refusal: (sessionId: string, events: EventParams[]) => Promise<string>;
  stop(): Promise<void>;
}

export async function startEventsStack(): Promise<EventsStack> {
  const stack = await startStack({ scenarios: SCENARIOS });
  try {
    const sdk = stack.client().sdk;
    const ext = stack.client(undefined, { extensions: true }).sdk;
    const environmentId = (await sdk.beta.environments.create({ name: "env" })).id;
    const sessionFor = async (scenario: string, tools: Anthropic.Beta.AgentCreateParams["tools"] = []): Promise<string> => {
      const agent = await sdk.beta.agents.create({ name: scenario, model: "claude-sonnet-5-5", system: `[scenario:${scenario}]`, tools });
      return (await sdk.beta.sessions.create({ agent: agent.id, environment_id: environmentId })).id;
    };
    const say = (sessionId: string, text: string): Promise<unknown> =>
      sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text }] }] });
    const allEvents = async (sessionId: string, client: Anthropic = sdk): Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[]> => {
      const out = [];
      for await (const e of client.beta.sessions.events.list(sessionId)) out.push(e);
      return out;
    };
    return {
      stack,
      sdk,
      ext,
      sessionFor,
      say,
      allEvents,
      pausedOnCustomTool: async (scenario = "weather-again") => {
        const sessionId = await sessionFor(scenario, WEATHER_TOOL);
        await say(sessionId, "weather in Paris?");
        await stack.brain.waitFor(sessionId, (ev) => ev.some((x) => x.type === "session.status_idle"));
        const use = (await allEvents(sessionId)).find((e): e is Anthropic.Beta.Sessions.BetaManagedAgentsAgentCustomToolUseEvent => e.type === "agent.custom_tool_use");
        if (use === undefined) throw new Error(`session ${sessionId} did not pause on a custom tool use`);
        return { sessionId, use };
      },
      refusal: async (sessionId, events) => {
        const err = await sdk.beta.sessions.events.send(sessionId, { events }).catch((e: unknown) => e);
        if (!(err instanceof Anthropic.BadRequestError)) throw new Error(`expected a 400, got ${String(err)}`);
        return err.apiMessage ?? "";
      },
      stop: () => stack.stop(),
    };
  } catch (err) {
    await stack.stop();
    throw err;
  }
}
