/**
 * An SDK session of an agent that declares its context window (the `mh.context_window_tokens`
 * metadata), as the long-session test and benchmark make them, and a turn driver over its event
 * stream: send a user message, read the stream up to the idle that ends the turn.
 */
import type Anthropic from "@anthropic-ai/sdk";

type SessionEvent = Anthropic.Beta.Sessions.BetaManagedAgentsStreamSessionEvents;

/** A session of a new agent on `model` whose system prompt names `scenario`, with a window of `windowTokens`. */
export async function windowedSession(sdk: Anthropic, opts: { name: string; model: string; scenario: string; windowTokens: number }): Promise<string> {
  const agent = await sdk.beta.agents.create({
    name: opts.name,
    model: opts.model,
    system: `[scenario:${opts.scenario}] You acknowledge.`,
    metadata: { "mh.context_window_tokens": String(opts.windowTokens) },
  });
  const environment = await sdk.beta.environments.create({ name: opts.name });
  const session = await sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
  return session.id;
}

export interface TurnDriver {
  /** Sends `text` as a user message and reads the stream until the idle that ends the turn, which it returns. */
  turn(text: string): Promise<SessionEvent>;
  close(): void;
}

/** Follows the session's stream; `seen` gets every event it reads. */
export async function turnDriver(sdk: Anthropic, sessionId: string, seen: (event: SessionEvent) => void): Promise<TurnDriver> {
  const stream = await sdk.beta.sessions.events.stream(sessionId);
  const events = stream[Symbol.asyncIterator]();
  return {
    async turn(text) {
      await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text }] }] });
      for (;;) {
        const next = await events.next();
        if (next.done === true) throw new Error("the stream ended");
        seen(next.value);
        if (next.value.type === "session.status_idle") return next.value;
      }
    },
    close: () => stream.controller.abort(),
  };
}
