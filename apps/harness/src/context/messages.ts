/**
 * Events -> Messages API conversation. User input (messages, tool results) and the model's output
 * (thinking, text, tool calls) are folded into alternating user / assistant messages; within a
 * user message tool results come first, as the API requires after a tool_use. A system.message
 * has no role of its own in the Messages API: it is user-side text, marked as the system's
 * (systemText), at its place in the conversation.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { ContentBlock, Event } from "@metaharness/proto";
import { completedRequests } from "../state.js";

type Param = Anthropic.MessageParam;
type UserBlock = Anthropic.ContentBlockParam;

function textBlocks(content: readonly ContentBlock[]): Anthropic.TextBlockParam[] {
  return content.flatMap((c) => (c.block?.$case === "text" && c.block.value.text !== "" ? [{ type: "text" as const, text: c.block.value.text }] : []));
}

/**
 * A stored block as the Messages API takes it, undefined for what the model is not sent: redacted
 * blocks, and sources it cannot read (a file id: there is no Files API here).
 */
function messageBlock(c: ContentBlock): ToolResultContent | undefined {
  const b = c.block;
  switch (b?.$case) {
    case "text":
      return b.value.text === "" ? undefined : { type: "text", text: b.value.text };
    case "image": {
      const s = b.value.source;
      if (s?.type === "base64") return { type: "image", source: { type: "base64", media_type: s.mediaType as Anthropic.Base64ImageSource["media_type"], data: s.data } };
      if (s?.type === "url") return { type: "image", source: { type: "url", url: s.url } };
      return undefined;
    }
    case "document": {
      const s = b.value.source;
      const { title, context } = b.value;
      const named = { ...(title === "" ? {} : { title }), ...(context === "" ? {} : { context }) };
      if (s?.type === "base64") return { type: "document", source: { type: "base64", media_type: s.mediaType as "application/pdf", data: s.data }, ...named };
      if (s?.type === "text") return { type: "document", source: { type: "text", media_type: "text/plain", data: s.data }, ...named };
      if (s?.type === "url") return { type: "document", source: { type: "url", url: s.url }, ...named };
      return undefined;
    }
    case "searchResult": {
      const { source, title, content, citationsEnabled } = b.value;
      return { type: "search_result", source, title, content: content.map((t) => ({ type: "text", text: t.text })), citations: { enabled: citationsEnabled } };
    }
    default:
      return undefined;
  }
}

type ToolResultContent = Exclude<NonNullable<Anthropic.ToolResultBlockParam["content"]>, string>[number];

function blocks(content: readonly ContentBlock[]): ToolResultContent[] {
  return content.flatMap((c) => {
    const block = messageBlock(c);
    return block === undefined ? [] : [block];
  });
}

/** A user message's blocks (search results are refused there on append). */
function userBlocks(content: readonly ContentBlock[]): UserBlock[] {
  return blocks(content).filter((b) => b.type === "text" || b.type === "image" || b.type === "document");
}

function toolResult(toolUseId: string, content: readonly ContentBlock[], isError: boolean): Anthropic.ToolResultBlockParam {
  const sent = blocks(content);
  return { type: "tool_result", tool_use_id: toolUseId, content: sent.length > 0 ? sent : "(no output)", is_error: isError };
}

/** A system.message as the model reads it: the client's system-role text, set apart from the user's. */
export function systemText(text: string): string {
  return `<system-message>\n${text}\n</system-message>`;
}

/** One event's contribution: which side, and its blocks. */
function blocksOf(event: Event): { role: "user" | "assistant"; blocks: UserBlock[] } | undefined {
  const p = event.payload;
  switch (p?.$case) {
    case "userMessage":
      return { role: "user", blocks: userBlocks(p.value.content) };
    case "agentToolResult":
      return { role: "user", blocks: [toolResult(p.value.toolUseId, p.value.content, p.value.isError)] };
    case "agentMcpToolResult":
      return { role: "user", blocks: [toolResult(p.value.mcpToolUseId, p.value.content, p.value.isError)] };
    case "userCustomToolResult":
      return { role: "user", blocks: [toolResult(p.value.customToolUseId, p.value.content, p.value.isError)] };
    case "userToolResult":
      return { role: "user", blocks: [toolResult(p.value.toolUseId, p.value.content, p.value.isError)] };
    case "systemMessage":
      return { role: "user", blocks: textBlocks(p.value.content).map((b) => ({ type: "text", text: systemText(b.text) })) };
    case "agentThinking":
      return p.value.signature === ""
        ? undefined
        : { role: "assistant", blocks: [{ type: "thinking", thinking: p.value.thinking, signature: p.value.signature }] };
    case "agentMessage":
      return { role: "assistant", blocks: textBlocks(p.value.content) };
    case "agentToolUse":
    case "agentMcpToolUse":
    case "agentCustomToolUse":
      return { role: "assistant", blocks: [{ type: "tool_use", id: event.id, name: p.value.name, input: p.value.input ?? {} }] };
    default:
      return undefined;
  }
}

/**
 * The events in the order the model saw them: user input that arrived while a model request
 * streamed was not part of that request, so it goes after the request's response.
 */
export function modelOrder(events: readonly Event[]): Event[] {
  const completed = completedRequests(events);
  const out: Event[] = [];
  let held: Event[] = [];
  let open: string | undefined;
  for (const e of events) {
    const c = e.payload?.$case;
    if (c === "spanModelRequestStart" && completed.has(e.id)) open = e.id;
    if (open !== undefined && blocksOf(e)?.role === "user") {
      held.push(e);
      continue;
    }
    out.push(e);
    if (c === "spanModelRequestEnd" && e.payload?.$case === "spanModelRequestEnd" && e.payload.value.modelRequestStartId === open) {
      out.push(...held);
      held = [];
      open = undefined;
    }
  }
  return [...out, ...held];
}

export function toMessages(events: readonly Event[]): Param[] {
  return orderedMessages(modelOrder(events));
}

/**
 * toMessages of events already in model order (modelOrder's output, filtered or led by a user
 * event: ordering them again changes nothing), without ordering them again.
 */
export function orderedMessages(ordered: readonly Event[]): Param[] {
  const messages: Param[] = [];
  for (const event of ordered) {
    const part = blocksOf(event);
    if (part === undefined || part.blocks.length === 0) continue;
    const last = messages[messages.length - 1];
    if (last !== undefined && last.role === part.role && Array.isArray(last.content)) {
      last.content.push(...part.blocks);
    } else {
      messages.push({ role: part.role, content: [...part.blocks] });
    }
  }
  for (const m of messages) {
    if (m.role === "user" && Array.isArray(m.content)) {
      // tool_result blocks first: a queued user message may have arrived before a tool finished.
      m.content.sort((a, b) => Number(b.type === "tool_result") - Number(a.type === "tool_result"));
    }
  }
  // The API wants the conversation to start with the user.
  while (messages[0]?.role === "assistant") messages.shift();
  alignCitations(messages);
  return messages;
}

/**
 * The Messages API takes citations on all search results of a request or on none ("all or
 * nothing": mixing is an error, and the log would replay the mix into every later request).
 * They stay on only if every search result allows them.
 */
function alignCitations(messages: Param[]): void {
  const results: Anthropic.SearchResultBlockParam[] = [];
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const block of m.content) {
      if (block.type === "search_result") results.push(block);
      if (block.type === "tool_result" && Array.isArray(block.content)) {
        for (const inner of block.content) if (inner.type === "search_result") results.push(inner);
      }
    }
  }
  const enabled = results.every((r) => r.citations?.enabled === true);
  for (const r of results) r.citations = { enabled };
}

/** What an image costs at most: the API scales images to ~1.15 megapixels, ~1,600 tokens. */
const IMAGE_TOKENS = 1600;
const IMAGE_STAND_IN = "x".repeat(IMAGE_TOKENS * 4);

/**
 * Rough token count of a request part (the API's ~4 characters per token). An image counts as
 * what the API charges for it, not its base64 length (a 1 MB screenshot is ~1,600 tokens, not 330,000).
 */
export function estimateTokens(value: unknown): number {
  const json = JSON.stringify(value);
  // A replacer slows every stringify down: only when there may be an image to count differently.
  if (!json.includes('"base64"')) return Math.ceil(json.length / 4);
  return Math.ceil(JSON.stringify(value, (_key, v: unknown) => (isBase64Image(v) ? IMAGE_STAND_IN : v)).length / 4);
}

/** An image with its bytes inline: as the Messages API spells it, or as content.proto (a log event). */
function isBase64Image(v: unknown): boolean {
  if (typeof v !== "object" || v === null) return false;
  const o = v as { type?: unknown; source?: unknown; $case?: unknown; value?: { source?: unknown } };
  const source = o.type === "image" ? o.source : o.$case === "image" ? o.value?.source : undefined;
  return typeof source === "object" && source !== null && (source as { type?: unknown }).type === "base64";
}
