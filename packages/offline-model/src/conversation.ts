/**
 * Reading a validated request the way a scenario needs it: which scenario it asks for (header
 * `x-mh-scenario`, else a `[scenario:NAME]` marker in the system prompt or first user message),
 * which step it is at (assistant turns already present), and the context a step function sees.
 */
import type { StepContext, ToolResultView } from "./scenario.js";
import type { ContentBlockParam, MessageParam, MessagesRequest } from "./wire.js";

export const SCENARIO_HEADER = "x-mh-scenario";
const MARKER = /\[scenario:([A-Za-z0-9_.-]{1,100})\]/;
const MARKERS = new RegExp(MARKER.source, "g");

export function scenarioNameOf(request: MessagesRequest, header: string | undefined): string | undefined {
  if (header !== undefined && header.trim() !== "") return header.trim();
  const system = request.system;
  const systemText = typeof system === "string" ? system : (system ?? []).map((b) => b.text).join("\n");
  const firstUser = request.messages[0];
  const firstUserText = firstUser === undefined ? "" : textOf(firstUser);
  return MARKER.exec(systemText)?.[1] ?? MARKER.exec(firstUserText)?.[1];
}

/** Assistant turns already answered; a trailing assistant message is a prefill, not a turn. */
export function stepIndexOf(messages: readonly MessageParam[]): number {
  const answered = messages.at(-1)?.role === "assistant" ? messages.slice(0, -1) : messages;
  return answered.filter((m) => m.role === "assistant").length;
}

export function blocksOf(message: MessageParam): readonly ContentBlockParam[] {
  return typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
}

/** The text blocks of a message joined by newlines. */
export function textOf(message: MessageParam): string {
  return blocksOf(message)
    .flatMap((b) => (b.type === "text" ? [b.text] : []))
    .join("\n");
}

function toolResultText(content: string | readonly ContentBlockParam[] | undefined): string {
  if (content === undefined) return "";
  if (typeof content === "string") return content;
  return content.map(blockText).join("\n");
}

/** A tool result block as a scenario reads it: text as is, a search result by title and text. */
function blockText(b: ContentBlockParam): string {
  if (b.type === "text") return b.text;
  if (b.type === "search_result") {
    // A passthrough block: its fields are read as far as they hold what they should.
    const texts = Array.isArray(b.content) ? b.content.flatMap((t: unknown) => (isText(t) ? [t.text] : [])) : [];
    return `[search_result: ${String(b["title"])} (${String(b["source"])})] ${texts.join(" ")}`;
  }
  return `[${b.type}]`;
}

export function toolResultsOf(messages: readonly MessageParam[]): ToolResultView[] {
  const uses = new Map<string, { name: string; input: Readonly<Record<string, unknown>> }>();
  const results: ToolResultView[] = [];
  messages.forEach((message, messageIndex) => {
    for (const block of blocksOf(message)) {
      if (block.type === "tool_use") uses.set(block.id, { name: block.name, input: block.input });
      if (block.type === "tool_result") {
        const use = uses.get(block.tool_use_id);
        results.push({
          toolUseId: block.tool_use_id,
          toolName: use?.name ?? "",
          toolInput: use?.input ?? {},
          content: toolResultText(block.content),
          isError: block.is_error ?? false,
          messageIndex,
        });
      }
    }
  });
  return results;
}

export function stepContext(request: MessagesRequest, scenario: string, stepIndex: number): StepContext {
  const lastUser = request.messages.findLast((m) => m.role === "user");
  const toolResults = toolResultsOf(request.messages);
  return {
    request,
    scenario,
    stepIndex,
    // Without the marker: a scenario echoing the user should not echo its own selector.
    lastUserText: lastUser === undefined ? "" : textOf(lastUser).replace(MARKERS, "").trim(),
    toolResults,
    lastToolResult: toolResults.at(-1),
  };
}

function isText(value: unknown): value is { type: "text"; text: string } {
  return typeof value === "object" && value !== null && (value as { type?: unknown }).type === "text" && typeof (value as { text?: unknown }).text === "string";
}
