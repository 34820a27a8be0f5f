/**
 * Request validation for POST /v1/messages (and count_tokens): the checks the real API makes
 * before the model runs, answered with a 400 invalid_request_error that names the field. Fields we
 * do not interpret (metadata, service_tier, betas' extras) pass unchecked, as SDKs send them.
 */
import { invalidRequest } from "./api-error.js";
import {
  checkCacheControl,
  isObject,
  optionalBool,
  optionalNumber,
  path,
  requireArray,
  requireInt,
  requireObject,
  requireOneOf,
  requireString,
  type JsonObject,
} from "./validate-fields.js";
import { validateMessages } from "./validate-messages.js";
import type { MessagesRequest } from "./wire.js";

/** The largest max_tokens any model accepts; the real limit depends on the model. */
export const MAX_OUTPUT_TOKENS = 128_000;
export const MIN_THINKING_BUDGET_TOKENS = 1024;
export const MAX_CACHE_BREAKPOINTS = 4;
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

export interface ValidateOptions {
  /** count_tokens takes no max_tokens. */
  readonly requireMaxTokens?: boolean;
}

export function validateRequest(body: unknown, opts: ValidateOptions = {}): MessagesRequest {
  if (!isObject(body)) throw invalidRequest("", "The request body must be a JSON object");
  const model = requireString(body, "model", "");
  if (model === "") throw invalidRequest("model", "String should have at least 1 character");
  if (opts.requireMaxTokens ?? true) requireInt(body, "max_tokens", "", { min: 1, max: MAX_OUTPUT_TOKENS });
  optionalBool(body, "stream", "");
  optionalNumber(body, "temperature", "", 0, 1);
  optionalNumber(body, "top_p", "", 0, 1);
  if (body["top_k"] !== undefined && body["top_k"] !== null) requireInt(body, "top_k", "", { min: 0 });
  checkStopSequences(body["stop_sequences"]);
  const thinkingOn = checkThinking(body);
  let breakpoints = checkSystem(body["system"]);
  const toolNames = checkTools(body["tools"]);
  breakpoints += toolNames.breakpoints;
  checkToolChoice(body["tool_choice"], toolNames.names);
  breakpoints += validateMessages(body["messages"], thinkingOn);
  if (breakpoints > MAX_CACHE_BREAKPOINTS) {
    throw invalidRequest("", `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints}.`);
  }
  return body as MessagesRequest;
}

function checkStopSequences(value: unknown): void {
  if (value === undefined || value === null) return;
  requireArray(value, "stop_sequences").forEach((s, i) => {
    if (typeof s !== "string") throw invalidRequest(path("stop_sequences", i), "Input should be a valid string");
    if (s.trim() === "") throw invalidRequest("stop_sequences", "each stop sequence must contain non-whitespace");
  });
}

/** Returns whether thinking is on (enabled or adaptive). */
function checkThinking(body: JsonObject): boolean {
  const value = body["thinking"];
  if (value === undefined || value === null) return false;
  const thinking = requireObject(value, "thinking");
  const type = requireOneOf(thinking, "type", "thinking", ["enabled", "adaptive", "disabled"]);
  if (type === "disabled") return false;
  if (thinking["display"] !== undefined && thinking["display"] !== null) {
    requireOneOf(thinking, "display", "thinking", ["summarized", "omitted"]);
  }
  if (type === "enabled") {
    const budget = requireInt(thinking, "budget_tokens", "thinking.enabled", { min: MIN_THINKING_BUDGET_TOKENS });
    const maxTokens = body["max_tokens"];
    if (typeof maxTokens === "number" && maxTokens <= budget) {
      throw invalidRequest("", "`max_tokens` must be greater than `thinking.budget_tokens`");
    }
  }
  const temperature = body["temperature"];
  if (typeof temperature === "number" && temperature !== 1) {
    throw invalidRequest("", "`temperature` may only be set to 1 when thinking is enabled or in adaptive mode.");
  }
  return true;
}

function checkSystem(value: unknown): number {
  if (value === undefined || value === null || typeof value === "string") return 0;
  return requireArray(value, "system").reduce<number>((n, raw, i) => {
    const at = path("system", i);
    const block = requireObject(raw, at);
    requireOneOf(block, "type", at, ["text"]);
    if (requireString(block, "text", at) === "") throw invalidRequest("system", "text content blocks must be non-empty");
    return n + checkCacheControl(block, at);
  }, 0);
}

function checkTools(value: unknown): { readonly names: readonly string[]; readonly breakpoints: number } {
  if (value === undefined || value === null) return { names: [], breakpoints: 0 };
  const names: string[] = [];
  let breakpoints = 0;
  requireArray(value, "tools").forEach((raw, i) => {
    const at = path("tools", i);
    const tool = requireObject(raw, at);
    const name = requireString(tool, "name", at);
    if (!TOOL_NAME.test(name)) throw invalidRequest(path(at, "name"), "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'");
    const type = tool["type"];
    if (type === undefined || type === null || type === "custom") {
      const schemaAt = path(at, "input_schema");
      if (tool["input_schema"] === undefined) throw invalidRequest(schemaAt, "Field required");
      requireOneOf(requireObject(tool["input_schema"], schemaAt), "type", schemaAt, ["object"]);
    } else if (typeof type !== "string") {
      throw invalidRequest(path(at, "type"), "Input should be a valid string");
    }
    if (names.includes(name)) throw invalidRequest("tools", "Tool names must be unique.");
    names.push(name);
    breakpoints += checkCacheControl(tool, at);
  });
  return { names, breakpoints };
}

function checkToolChoice(value: unknown, toolNames: readonly string[]): void {
  if (value === undefined || value === null) return;
  const choice = requireObject(value, "tool_choice");
  const type = requireOneOf(choice, "type", "tool_choice", ["auto", "any", "tool", "none"]);
  optionalBool(choice, "disable_parallel_tool_use", "tool_choice");
  if (toolNames.length === 0 && type !== "auto" && type !== "none") {
    throw invalidRequest("", "tool_choice may only be specified while providing tools.");
  }
  if (type === "tool") {
    const name = requireString(choice, "name", "tool_choice");
    if (!toolNames.includes(name)) throw invalidRequest("tool_choice.name", `Tool '${name}' not found in provided tools`);
  }
}
