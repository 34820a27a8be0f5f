/**
 * A minimal external agent for the "external-process" harness (protocol in
 * ../loop/external-process.ts): it answers each new user message with "echo: <text>". A message
 * starting with "!bash " is run as a sandbox tool call first, and the reply quotes its result, to
 * show the tool round trip. It keeps no memory: every turn it looks at the events the harness
 * sent and answers the user messages after the last completed turn, as a real agent would rebuild
 * its context from the log. Run as `node dist/examples/echo-agent.js`; it exits when stdin closes.
 */
import { createInterface } from "node:readline";
import type { ManagedAgentsEventJson } from "@metaharness/events";
import type { HarnessMessage } from "../loop/external/protocol.js";

type ToolResult = Extract<HarnessMessage, { type: "tool_result" }>;

const seen: ManagedAgentsEventJson[] = [];
const waiting = new Map<string, (result: ToolResult) => void>();
let calls = 0;

function send(line: object): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function textOf(event: ManagedAgentsEventJson): string {
  if (event.type !== "user.message") return "";
  return event.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("\n");
}

function tool(name: string, input: Record<string, unknown>): Promise<ToolResult> {
  const id = `call-${++calls}`;
  const result = new Promise<ToolResult>((resolve) => waiting.set(id, resolve));
  send({ type: "tool", id, name, input });
  return result;
}

/** The user messages since the last completed turn (span end) this agent was shown. */
function unanswered(): string[] {
  let from = 0;
  seen.forEach((e, i) => {
    if (e.type === "span.model_request_end") from = i + 1;
  });
  return seen.slice(from).filter((e) => e.type === "user.message").map(textOf);
}

async function turn(): Promise<void> {
  const replies: string[] = [];
  for (const text of unanswered()) {
    if (text.startsWith("!bash ")) {
      const result = await tool("bash", { command: text.slice("!bash ".length) });
      replies.push(`echo: ${text} -> ${result.is_error ? "error: " : ""}${result.content}`);
    } else {
      replies.push(`echo: ${text}`);
    }
  }
  const reply = replies.join("\n") || "echo: (nothing new)";
  send({ type: "emit", event: { type: "agent.message", content: [{ type: "text", text: reply }] } });
  send({ type: "idle", stop_reason: "end_turn", usage: { input_tokens: 0, output_tokens: Math.ceil(reply.length / 4) } });
}

let turns: Promise<void> = Promise.resolve();
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const message = JSON.parse(line) as HarnessMessage;
  if (message.type === "events") {
    seen.push(...message.events);
    turns = turns.then(turn);
  } else if (message.type === "tool_result") {
    waiting.get(message.id)?.(message);
    waiting.delete(message.id);
  }
});
lines.on("close", () => {
  void turns.finally(() => process.exit(0));
});
