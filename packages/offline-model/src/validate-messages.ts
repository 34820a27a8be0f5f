/**
 * Validation of `messages`: roles that alternate starting with user, well-formed content blocks in
 * the role allowed to send them, every tool_use answered by a tool_result in the next message (and
 * no stray tool_result), thinking blocks returned unmodified (signature check), and, with thinking
 * on, a tool loop whose assistant turn still starts with its thinking. These are the mistakes a
 * harness makes when it rebuilds a conversation from its event log.
 */
import { invalidRequest } from "./api-error.js";
import { signThinking } from "./ids.js";
import {
  checkCacheControl,
  isObject,
  path,
  requireArray,
  requireObject,
  requireOneOf,
  requireString,
  type JsonObject,
} from "./validate-fields.js";
import { PASSTHROUGH_BLOCK_TYPES } from "./wire.js";

const BLOCK_TYPES: readonly string[] = ["text", "tool_use", "tool_result", "thinking", "redacted_thinking", ...PASSTHROUGH_BLOCK_TYPES];
const TOOL_RESULT_CONTENT_TYPES: readonly string[] = ["text", "image", "document", "search_result", "tool_reference"];
const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/;

interface MessageFacts {
  readonly role: "user" | "assistant";
  readonly blocks: readonly JsonObject[];
  readonly toolUseIds: readonly string[];
  readonly toolResultIds: readonly string[];
}

/**
 * Search results take citations all or nothing: every search_result of a request (top level or
 * in a tool_result) has them enabled, or none has.
 */
function checkCitationsAllOrNothing(facts: readonly MessageFacts[]): void {
  const settings = new Set<boolean>();
  for (const f of facts) {
    for (const block of f.blocks) {
      const inner = block["type"] === "tool_result" && Array.isArray(block["content"]) ? (block["content"] as unknown[]) : [block];
      for (const b of inner) {
        if (isObject(b) && b["type"] === "search_result") settings.add(isObject(b["citations"]) && b["citations"]["enabled"] === true);
      }
    }
  }
  if (settings.size > 1) throw invalidRequest("messages", "Citations must be enabled on all search results or on none of them");
}

/** Checks `messages`; returns how many cache_control breakpoints they hold. */
export function validateMessages(value: unknown, thinkingOn: boolean): number {
  const list = requireArray(value, "messages");
  if (list.length === 0) throw invalidRequest("messages", "List should have at least 1 item after validation, not 0");
  let breakpoints = 0;
  const facts: MessageFacts[] = [];
  list.forEach((raw, i) => {
    const at = path("messages", i);
    const message = requireObject(raw, at);
    const role = requireOneOf(message, "role", at, ["user", "assistant"]);
    const isFinal = i === list.length - 1;
    const blocks = contentBlocks(message, at, role, isFinal);
    breakpoints += blocks.reduce((n, block, j) => n + checkBlock(block, path(path(at, "content"), j), role), 0);
    facts.push(factsOf(role, blocks, at));
  });
  checkRoles(facts);
  checkToolPairs(facts);
  checkCitationsAllOrNothing(facts);
  if (thinkingOn) checkThinkingLeadsToolLoop(facts);
  return breakpoints;
}

function contentBlocks(message: JsonObject, at: string, role: string, isFinal: boolean): readonly JsonObject[] {
  const content = message["content"];
  if (content === undefined) throw invalidRequest(path(at, "content"), "Field required");
  const emptyAllowed = isFinal && role === "assistant";
  const nonEmpty = "all messages must have non-empty content except for the optional final assistant message";
  if (typeof content === "string") {
    if (content === "" && !emptyAllowed) throw invalidRequest("messages", nonEmpty);
    if (isFinal && role === "assistant" && /\s$/.test(content)) {
      throw invalidRequest("messages", "final assistant content cannot end with trailing whitespace");
    }
    return content === "" ? [] : [{ type: "text", text: content }];
  }
  const blocks = requireArray(content, path(at, "content"));
  if (blocks.length === 0 && !emptyAllowed) throw invalidRequest("messages", nonEmpty);
  return blocks.map((b, j) => requireObject(b, path(path(at, "content"), j)));
}

function checkBlock(block: JsonObject, at: string, role: "user" | "assistant"): number {
  const type = requireString(block, "type", at);
  if (!BLOCK_TYPES.includes(type)) {
    throw invalidRequest(path(at, "type"), `Input tag '${type}' found using 'type' does not match any of the expected tags`);
  }
  switch (type) {
    case "text":
      if (requireString(block, "text", at) === "") throw invalidRequest("messages", "text content blocks must be non-empty");
      break;
    case "tool_use": {
      onlyIn(role, "assistant", type, at);
      const id = requireString(block, "id", at);
      if (!TOOL_USE_ID.test(id)) throw invalidRequest(path(at, "id"), "String should match pattern '^[a-zA-Z0-9_-]+$'");
      requireString(block, "name", at);
      requireObject(block["input"], path(at, "input"));
      break;
    }
    case "tool_result":
      onlyIn(role, "user", type, at);
      checkToolResult(block, at);
      break;
    case "thinking": {
      onlyIn(role, "assistant", type, at);
      const thinking = requireString(block, "thinking", at);
      if (requireString(block, "signature", at) !== signThinking(thinking)) {
        throw invalidRequest(at, "Invalid `signature` in `thinking` block");
      }
      break;
    }
    case "redacted_thinking":
      onlyIn(role, "assistant", type, at);
      requireString(block, "data", at);
      break;
    default:
      break;
  }
  return checkCacheControl(block, at);
}

function onlyIn(role: string, allowed: "user" | "assistant", type: string, at: string): void {
  if (role !== allowed) throw invalidRequest(at, `\`${type}\` blocks can only be in \`${allowed}\` messages`);
}

function checkToolResult(block: JsonObject, at: string): void {
  requireString(block, "tool_use_id", at);
  const isError = block["is_error"];
  if (isError !== undefined && typeof isError !== "boolean") {
    throw invalidRequest(path(at, "is_error"), "Input should be a valid boolean");
  }
  const content = block["content"];
  if (content === undefined || typeof content === "string") return;
  requireArray(content, path(at, "content")).forEach((inner, k) => {
    const innerAt = path(path(at, "content"), k);
    const type = requireString(requireObject(inner, innerAt), "type", innerAt);
    if (!TOOL_RESULT_CONTENT_TYPES.includes(type)) {
      throw invalidRequest(path(innerAt, "type"), `Input tag '${type}' found using 'type' does not match any of the expected tags`);
    }
    if (type === "text" && isObject(inner)) requireString(inner, "text", innerAt);
  });
}

function factsOf(role: "user" | "assistant", blocks: readonly JsonObject[], at: string): MessageFacts {
  const toolUseIds: string[] = [];
  const toolResultIds: string[] = [];
  blocks.forEach((block, j) => {
    if (block["type"] === "tool_use") {
      const id = String(block["id"]);
      if (toolUseIds.includes(id)) throw invalidRequest(path(path(at, "content"), j), "`tool_use` ids must be unique");
      toolUseIds.push(id);
    }
    if (block["type"] === "tool_result") toolResultIds.push(String(block["tool_use_id"]));
  });
  return { role, blocks, toolUseIds, toolResultIds };
}

function checkRoles(facts: readonly MessageFacts[]): void {
  if (facts[0]?.role !== "user") throw invalidRequest("messages", 'first message must use the "user" role');
  facts.forEach((m, i) => {
    if (i > 0 && facts[i - 1]?.role === m.role) {
      throw invalidRequest(
        "messages",
        `roles must alternate between "user" and "assistant", but found multiple "${m.role}" roles in a row`,
      );
    }
  });
}

function checkToolPairs(facts: readonly MessageFacts[]): void {
  facts.forEach((m, i) => {
    const previous = facts[i - 1];
    const offered = previous?.role === "assistant" ? previous.toolUseIds : [];
    const stray = m.toolResultIds.filter((id) => !offered.includes(id));
    if (stray.length > 0) {
      const j = m.blocks.findIndex((b) => b["type"] === "tool_result" && b["tool_use_id"] === stray[0]);
      throw invalidRequest(
        path(path(path("messages", i), "content"), j),
        `unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${stray.join(", ")}. ` +
          "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
      );
    }
    const next = facts[i + 1];
    if (m.role !== "assistant" || next === undefined) return;
    const unanswered = m.toolUseIds.filter((id) => !next.toolResultIds.includes(id));
    if (unanswered.length > 0) {
      throw invalidRequest(
        path("messages", i + 1),
        `\`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(", ")}. ` +
          "Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
      );
    }
  });
}

/** With thinking on, the assistant turn that opened the current tool loop must keep its thinking. */
function checkThinkingLeadsToolLoop(facts: readonly MessageFacts[]): void {
  const last = facts.at(-1);
  const turn = facts.at(-2);
  if (last?.role !== "user" || last.toolResultIds.length === 0 || turn === undefined) return;
  const first = turn.blocks[0]?.["type"];
  if (first === "thinking" || first === "redacted_thinking") return;
  throw invalidRequest(
    path(path(path("messages", facts.length - 2), "content"), 0) + ".type",
    `Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first)}\`. When \`thinking\` is enabled, ` +
      "a final `assistant` message must start with a thinking block (preceding the lastmost set of `tool_use` and " +
      "`tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this " +
      "requirement, disable `thinking`.",
  );
}
