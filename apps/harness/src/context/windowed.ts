/**
 * The "windowed" context strategy: every model request stays under the session's token budget
 * (AgentConfig.context_window_tokens) however long the session grows. A request holds the system
 * prompt, the tools, a short header saying how many earlier events were left out and how to read
 * them, and the most recent events that fit, cut at a safe boundary (window-cut.ts). Nothing is
 * deleted from the log: the model re-reads any slice with its built-in read_session_events tool.
 * Cache breakpoints sit where the replay strategy puts them; the cut moves in jumps, so between
 * two jumps consecutive requests share their prefix and read it from the cache.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { newEvent } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import type { StreamParams } from "@metaharness/model-client";
import { estimateTokens, modelOrder, toMessages } from "./messages.js";
import { systemWithBreakpoint, withTailBreakpoint } from "./replay.js";
import { READ_TOOL, READ_TOOL_NAME, readSessionEvents } from "./session-reader.js";
import type { ContextInput, ContextStrategy } from "./strategy.js";
import { fitTexts } from "./text-fit.js";
import { chooseStart, nextSafe, planOf } from "./window-cut.js";

export const DEFAULT_WINDOW_TOKENS = 20_000;
/** What the header costs at most, and what the client adds to the body (model, max_tokens, stream). */
const HEADER_TOKENS = 120;
const WIRE_TOKENS = 40;

const EPHEMERAL = { type: "ephemeral" } as const;

export function windowTokens(input: Pick<ContextInput, "agent">): number {
  const n = input.agent?.contextWindowTokens ?? 0;
  return n > 0 ? n : DEFAULT_WINDOW_TOKENS;
}

export function windowHeader(left: readonly Event[], firstShown: Event | undefined, budget: number): string {
  const seqs = left.map((e) => e.seq);
  const range = seqs.length === 0 ? "" : ` (seq ${Math.min(...seqs)} to ${Math.max(...seqs)})`;
  const back = firstShown === undefined ? '{"after_seq": 0}' : `{"before_seq": ${firstShown.seq}}`;
  return (
    `[context window] ${left.length} earlier events of this session${range} are not shown here, to keep this ` +
    `request under ${budget} tokens. They are still in the session log: call ${READ_TOOL_NAME} ` +
    `(e.g. ${back} for the events just before this point, or {"after_seq": 0} from the start) ` +
    "to re-read them before you rely on them."
  );
}

/** The conversation of ordered[start..]: with a header user turn when anything was left out. */
function messagesFrom(ordered: readonly Event[], start: number, budget: number): Anthropic.MessageParam[] {
  if (start === 0) return toMessages(ordered);
  const header = windowHeader(ordered.slice(0, start), ordered[start], budget);
  // A synthetic user event leads the window: the first message is the user's, and it carries the header.
  const lead = newEvent("user.message", { content: [{ block: { $case: "text", value: { text: header } } }] });
  return toMessages([lead, ...ordered.slice(start)]);
}

export const windowedStrategy: ContextStrategy = {
  name: "windowed",
  ownTools: [READ_TOOL],
  build(input: ContextInput): StreamParams {
    const budget = windowTokens(input);
    const withOwn = input.tools.some((t) => t.name === READ_TOOL_NAME) ? input.tools : [...input.tools, READ_TOOL];
    const tools = withOwn.map((t, i) => (i === withOwn.length - 1 ? { ...t, cache_control: EPHEMERAL } : t));
    const system = systemWithBreakpoint(input.agent?.system ?? "");
    const fixed = {
      ...(system === undefined ? {} : { system }),
      ...(tools.length > 0 ? { tools } : {}),
      ...(input.agent?.model ? { model: input.agent.model } : {}),
      ...(input.agent?.maxTokens ? { max_tokens: input.agent.maxTokens } : {}),
    };
    const available = budget - estimateTokens(fixed) - HEADER_TOKENS - WIRE_TOKENS;
    const ordered = modelOrder(input.events);
    const plan = planOf(ordered);
    const size = (messages: Anthropic.MessageParam[]): number =>
      estimateTokens({ ...fixed, messages: withTailBreakpoint(messages) }) + WIRE_TOKENS;

    // The per-event estimates are generous; the rendered request is what must fit.
    let start = chooseStart(ordered, plan, Math.max(available, 0));
    let messages = messagesFrom(ordered, start, budget);
    for (let next = nextSafe(plan, start, ordered.length); size(messages) > budget && next !== undefined; next = nextSafe(plan, start, ordered.length)) {
      start = next;
      messages = messagesFrom(ordered, start, budget);
    }
    // Even the last safe window is too large (one huge message or tool result): cut long texts.
    if (size(messages) > budget) messages = fitTexts(messages, (m) => size(m) <= budget);
    return { ...fixed, messages: withTailBreakpoint(messages) };
  },
  runOwnTool(name, input, log) {
    if (name !== READ_TOOL_NAME) return Promise.resolve({ output: `unknown tool "${name}"`, isError: true });
    return readSessionEvents(input, log);
  },
};
