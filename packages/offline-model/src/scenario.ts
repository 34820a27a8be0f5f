/**
 * What a scenario is: a named list of steps, one per assistant turn. The step answering a request
 * is chosen by how many assistant turns the request already holds, never by server state, so a
 * resent request gets the same answer. A step is data, or a pure function of the request (to echo
 * a tool result back, or compute a tool input from an earlier one). `defineScenario` checks the
 * data eagerly, so a typo in a test's script fails where it is written.
 */
import { invalidArgument } from "@metaharness/errors";
import type { MessagesRequest } from "./wire.js";

/** How an attempt fails: an HTTP status, a dropped connection, or an SSE `error` event mid-stream. */
export type FailureKind = 400 | 401 | 403 | 404 | 413 | 429 | 500 | 529 | "network" | "midstream_overloaded";
export const FAILURE_KINDS: readonly FailureKind[] = [400, 401, 403, 404, 413, 429, 500, 529, "network", "midstream_overloaded"];

export interface FailFirst {
  /** The first `times` attempts at this step (for one exact request) fail; later ones succeed. */
  readonly times: number;
  readonly status: FailureKind;
  /** The `retry-after` header (seconds) sent with a 429 or 529; 429 defaults to 1. */
  readonly retryAfterSeconds?: number;
  /** Replaces the error message. */
  readonly message?: string;
}

export interface ToolUseSpec {
  readonly name: string;
  readonly input: Readonly<Record<string, unknown>>;
}

export interface StepSpec {
  /** Emitted only when the request turns thinking on, as the real model does. */
  readonly thinking?: string;
  readonly text?: string;
  readonly toolUses?: readonly ToolUseSpec[];
  /** Defaults to "tool_use" when there are tool uses, else "end_turn". */
  readonly stopReason?: "end_turn" | "tool_use" | "max_tokens";
  readonly ttftMs?: number;
  /** Output pace; 0 streams without pauses. */
  readonly tokensPerSecond?: number;
  readonly failFirst?: FailFirst;
}

/** A tool result the request carries, joined with the tool_use it answers. */
export interface ToolResultView {
  readonly toolUseId: string;
  readonly toolName: string;
  readonly toolInput: Readonly<Record<string, unknown>>;
  /**
   * The result's text: text blocks joined by newlines, a search result as
   * `[search_result: <title> (<source>)] <its text>`, other blocks as `[image]` etc.
   */
  readonly content: string;
  readonly isError: boolean;
  readonly messageIndex: number;
}

/** What a step function sees. It must be a pure function of this, or resends would differ. */
export interface StepContext {
  readonly request: MessagesRequest;
  readonly scenario: string;
  readonly stepIndex: number;
  /**
   * The text blocks of the last user message, joined by newlines, without any `[scenario:NAME]`
   * marker ("" for a turn of tool results only).
   */
  readonly lastUserText: string;
  /** Every tool result in the conversation, oldest first. */
  readonly toolResults: readonly ToolResultView[];
  readonly lastToolResult: ToolResultView | undefined;
}

export type StepFunction = (ctx: StepContext) => StepSpec;
export type Step = StepSpec | StepFunction;

export interface Scenario {
  readonly name: string;
  readonly steps: readonly Step[];
  /** After the last step: answer 400 ("error", the default) or keep answering with the last step. */
  readonly onExhausted: "error" | "repeat-last";
}

export interface ScenarioOptions {
  readonly onExhausted?: Scenario["onExhausted"];
}

export const SCENARIO_NAME = /^[A-Za-z0-9_.-]{1,100}$/;
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const STOP_REASONS: readonly string[] = ["end_turn", "tool_use", "max_tokens"];

export function defineScenario(name: string, steps: readonly Step[], opts: ScenarioOptions = {}): Scenario {
  if (!SCENARIO_NAME.test(name)) throw invalidArgument("name", `scenario name ${JSON.stringify(name)} must match ${String(SCENARIO_NAME)}`);
  if (steps.length === 0) throw invalidArgument(`${name}.steps`, "a scenario needs at least one step");
  steps.forEach((step, i) => {
    if (typeof step !== "function") checkStepSpec(step, `${name}.steps[${i}]`);
  });
  return Object.freeze({ name, steps: Object.freeze([...steps]), onExhausted: opts.onExhausted ?? "error" });
}

/** Checks a step's data (also what a step function returned); throws INVALID_ARGUMENT naming the field. */
export function checkStepSpec(value: unknown, at: string): StepSpec {
  if (!isRecord(value)) throw invalidArgument(at, "a step must be an object");
  const known = new Set(["thinking", "text", "toolUses", "stopReason", "ttftMs", "tokensPerSecond", "failFirst"]);
  for (const key of Object.keys(value)) if (!known.has(key)) throw invalidArgument(`${at}.${key}`, "unknown step field");
  optionalString(value, "thinking", at);
  optionalString(value, "text", at);
  const toolUses = value["toolUses"];
  if (toolUses !== undefined) {
    if (!Array.isArray(toolUses)) throw invalidArgument(`${at}.toolUses`, "must be an array");
    toolUses.forEach((use: unknown, i) => {
      const where = `${at}.toolUses[${i}]`;
      if (!isRecord(use)) throw invalidArgument(where, "must be an object");
      if (typeof use["name"] !== "string" || !TOOL_NAME.test(use["name"])) {
        throw invalidArgument(`${where}.name`, `must be a tool name matching ${String(TOOL_NAME)}`);
      }
      if (!isRecord(use["input"])) throw invalidArgument(`${where}.input`, "must be an object");
    });
  }
  const stop = value["stopReason"];
  if (stop !== undefined && (typeof stop !== "string" || !STOP_REASONS.includes(stop))) {
    throw invalidArgument(`${at}.stopReason`, `must be one of ${STOP_REASONS.join(", ")}`);
  }
  optionalNonNegative(value, "ttftMs", at);
  optionalNonNegative(value, "tokensPerSecond", at);
  if (value["failFirst"] !== undefined) checkFailFirst(value["failFirst"], `${at}.failFirst`);
  return value;
}

function checkFailFirst(value: unknown, at: string): void {
  if (!isRecord(value)) throw invalidArgument(at, "must be an object");
  const times = value["times"];
  if (typeof times !== "number" || !Number.isInteger(times) || times < 0) {
    throw invalidArgument(`${at}.times`, "must be an integer >= 0");
  }
  if (!(FAILURE_KINDS as readonly unknown[]).includes(value["status"])) {
    throw invalidArgument(`${at}.status`, `must be one of ${FAILURE_KINDS.join(", ")}`);
  }
  optionalNonNegative(value, "retryAfterSeconds", at);
  optionalString(value, "message", at);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function optionalString(obj: Record<string, unknown>, key: string, at: string): void {
  if (obj[key] !== undefined && typeof obj[key] !== "string") throw invalidArgument(`${at}.${key}`, "must be a string");
}

function optionalNonNegative(obj: Record<string, unknown>, key: string, at: string): void {
  const v = obj[key];
  if (v !== undefined && (typeof v !== "number" || Number.isNaN(v) || v < 0)) {
    throw invalidArgument(`${at}.${key}`, "must be a number >= 0");
  }
}
