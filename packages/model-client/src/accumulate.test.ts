/**
 * The accumulator against the SDK's own stream helper: the same raw events give the same Message
 * (text with citations, thinking with its signature, tool input streamed in pieces, cut off by
 * max_tokens or never streamed, a server tool, the usage totals of message_delta), and the same
 * broken sequences fail with the same message.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { MessageStream } from "@anthropic-ai/sdk/lib/MessageStream";
import { describe, expect, it } from "vitest";
import { MessageAccumulator } from "./accumulate.js";

type Event = Anthropic.RawMessageStreamEvent;

const usage = { input_tokens: 12, output_tokens: 1, cache_creation_input_tokens: null, cache_read_input_tokens: null, server_tool_use: null, service_tier: "standard" };
const start = (): Event => ({
  type: "message_start",
  message: { id: "msg_1", type: "message", role: "assistant", model: "claude-test", content: [], stop_reason: null, stop_sequence: null, usage } as unknown as Anthropic.Message,
});
const blockStart = (index: number, block: object): Event => ({ type: "content_block_start", index, content_block: block } as Event);
const delta = (index: number, d: object): Event => ({ type: "content_block_delta", index, delta: d } as Event);
const stop = (index: number): Event => ({ type: "content_block_stop", index });
const end = (stopReason: string, u: object = { output_tokens: 40 }): Event[] => [
  { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: u } as Event,
  { type: "message_stop" },
];

/** What the SDK's helper makes of `events`: its final message without `parsed_output`, or its error's message. */
async function helper(events: readonly Event[]): Promise<unknown> {
  const lines = new TextEncoder().encode(events.map((e) => JSON.stringify(e)).join("\n") + "\n");
  const readable = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(lines);
      c.close();
    },
  });
  try {
    const { parsed_output: _, ...message } = await MessageStream.fromReadableStream(readable).finalMessage();
    return message;
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function ours(events: readonly Event[]): unknown {
  const acc = new MessageAccumulator();
  try {
    // Each event a fresh object, as the SDK parses each one from its line.
    for (const e of events) acc.add(structuredClone(e));
    return acc.result();
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const cases: Record<string, Event[]> = {
  "text in pieces, with citations": [
    start(),
    blockStart(0, { type: "text", text: "", citations: null }),
    delta(0, { type: "text_delta", text: "The backoff " }),
    delta(0, { type: "citations_delta", citation: { type: "char_location", cited_text: "x", document_index: 0, document_title: null, start_char_index: 0, end_char_index: 1, file_id: null } }),
    delta(0, { type: "text_delta", text: "never resets." }),
    stop(0),
    ...end("end_turn", { output_tokens: 40, input_tokens: 15, cache_read_input_tokens: 7, cache_creation_input_tokens: null }),
  ],
  "thinking with a signature, then text": [
    start(),
    blockStart(0, { type: "thinking", thinking: "", signature: "" }),
    delta(0, { type: "thinking_delta", thinking: "Plan: " }),
    delta(0, { type: "thinking_delta", thinking: "greet." }),
    delta(0, { type: "signature_delta", signature: "sig_1" }),
    stop(0),
    blockStart(1, { type: "text", text: "", citations: null }),
    delta(1, { type: "text_delta", text: "Hello." }),
    stop(1),
    ...end("end_turn"),
  ],
  "tool input streamed in pieces, a tool with none, a server tool": [
    start(),
    blockStart(0, { type: "text", text: "", citations: null }),
    delta(0, { type: "text_delta", text: "Checking." }),
    stop(0),
    blockStart(1, { type: "tool_use", id: "toolu_1", name: "bash", input: {} }),
    delta(1, { type: "input_json_delta", partial_json: "" }),
    delta(1, { type: "input_json_delta", partial_json: '{"command": "ls -la' }),
    delta(1, { type: "input_json_delta", partial_json: ' /tmp", "timeout_s": 30}' }),
    stop(1),
    blockStart(2, { type: "tool_use", id: "toolu_2", name: "noop", input: {} }),
    stop(2),
    blockStart(3, { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }),
    delta(3, { type: "input_json_delta", partial_json: '{"query": "backoff"}' }),
    stop(3),
    ...end("tool_use"),
  ],
  "tool input cut off by max_tokens (no block stop)": [
    start(),
    blockStart(0, { type: "tool_use", id: "toolu_1", name: "bash", input: {} }),
    delta(0, { type: "input_json_delta", partial_json: '{"command": "echo hi", "args": [1, 2' }),
    ...end("max_tokens"),
  ],
  "only empty input JSON": [
    start(),
    blockStart(0, { type: "tool_use", id: "toolu_1", name: "bash", input: {} }),
    delta(0, { type: "input_json_delta", partial_json: "" }),
    stop(0),
    ...end("tool_use"),
  ],
  "no message_stop": [start(), blockStart(0, { type: "text", text: "", citations: null }), delta(0, { type: "text_delta", text: "Hel" })],
  "no events": [],
  "a second message_start": [start(), start()],
};

describe("MessageAccumulator", () => {
  for (const [name, events] of Object.entries(cases)) {
    it(`builds what the SDK's stream helper builds: ${name}`, async () => {
      const expected = await helper(events);
      expect(ours(events)).toEqual(expected);
      // A failure is a failure for both; a message has its content.
      expect("error" in (expected as object)).toBe(name === "no message_stop" || name === "no events" || name === "a second message_start");
    });
  }
});
