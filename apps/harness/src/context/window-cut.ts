/**
 * Where the windowed strategy cuts the history. Two rules make a cut safe: it never separates a
 * tool_use from its tool_result (no call is open across it), and what follows it renders into
 * the conversation. The cut moves in jumps, not a little every turn: when the window overflows it
 * is cut down to LOW_WATER of the budget and then grows again, so consecutive requests share
 * their prefix and hit the prompt cache. The cut is replayed from the log's own request points
 * (span.model_request_start), so it is a pure function of the events: a fresh instance after a
 * crash cuts where the previous one did.
 */
import type { Event } from "@metaharness/proto";
import { estimateTokens } from "./messages.js";

/** After an overflow the window is refilled from this fraction of its budget. */
export const LOW_WATER = 0.5;

/** The id of the tool call an event opens or answers, if it is one of those. */
function toolCallOf(event: Event): { opens: string } | { answers: string } | undefined {
  const p = event.payload;
  switch (p?.$case) {
    case "agentToolUse":
    case "agentMcpToolUse":
    case "agentCustomToolUse":
      return { opens: event.id };
    case "agentToolResult":
    case "userToolResult":
      return { answers: p.value.toolUseId };
    case "agentMcpToolResult":
      return { answers: p.value.mcpToolUseId };
    case "userCustomToolResult":
      return { answers: p.value.customToolUseId };
    default:
      return undefined;
  }
}

/** Which side of the conversation an event is on (as messages.ts folds it), if it renders at all. */
export function roleOf(event: Event): "user" | "assistant" | undefined {
  const p = event.payload;
  switch (p?.$case) {
    case "userMessage":
      return p.value.content.length > 0 ? "user" : undefined;
    case "agentMessage":
      return p.value.content.length > 0 ? "assistant" : undefined;
    case "agentThinking":
      return p.value.signature !== "" ? "assistant" : undefined;
    default: {
      const call = toolCallOf(event);
      return call === undefined ? undefined : "opens" in call ? "assistant" : "user";
    }
  }
}

export function renders(event: Event): boolean {
  return roleOf(event) !== undefined;
}

/** A generous per-event token estimate (the payload's JSON), 0 for what does not render. */
export function eventTokens(event: Event): number {
  return renders(event) ? estimateTokens(event.payload?.value ?? null) : 0;
}

/**
 * safe[i]: the window may start at ordered[i]: no tool call is open across the cut, and the cut
 * does not split one model response (its thinking must stay with its tool calls).
 */
export function safeStarts(ordered: readonly Event[]): boolean[] {
  // A call that is never answered does not block cuts (it would be unpaired either way).
  const answered = new Set<string>();
  for (const e of ordered) {
    const call = toolCallOf(e);
    if (call !== undefined && "answers" in call) answered.add(call.answers);
  }
  const open = new Set<string>();
  let previous: "user" | "assistant" | undefined;
  return ordered.map((e) => {
    const role = roleOf(e);
    if (role === undefined) return false;
    const safe = open.size === 0 && !(role === "assistant" && previous === "assistant");
    const call = toolCallOf(e);
    if (call !== undefined && "opens" in call && answered.has(call.opens)) open.add(call.opens);
    if (call !== undefined && "answers" in call) open.delete(call.answers);
    previous = role;
    return safe;
  });
}

export interface CutPlan {
  readonly safe: readonly boolean[];
  /** prefix[i]: estimated tokens of ordered[0..i). */
  readonly prefix: readonly number[];
}

export function planOf(ordered: readonly Event[]): CutPlan {
  const prefix = [0];
  for (const e of ordered) prefix.push((prefix[prefix.length - 1] ?? 0) + eventTokens(e));
  return { safe: safeStarts(ordered), prefix };
}

/**
 * The start for a request seeing ordered[0..end), given the start of the request before it:
 * unchanged while the window fits `available`; otherwise the first safe start from which the
 * window fits LOW_WATER of it, or failing that the last safe start (the smallest window).
 */
export function advance(plan: CutPlan, from: number, end: number, available: number): number {
  const tokens = (s: number): number => (plan.prefix[end] ?? 0) - (plan.prefix[s] ?? 0);
  if (tokens(from) <= available) return from;
  let last: number | undefined;
  for (let s = from + 1; s < end; s++) {
    if (!plan.safe[s]) continue;
    if (tokens(s) <= available * LOW_WATER) return s;
    last = s;
  }
  return last ?? from;
}

/** The next safe start after `start` before `end`, if any (to shrink a window that still overflows). */
export function nextSafe(plan: CutPlan, start: number, end: number): number | undefined {
  for (let s = start + 1; s < end; s++) if (plan.safe[s]) return s;
  return undefined;
}

/** Replays the cut over every earlier request of the log, then for the request being built. */
export function chooseStart(ordered: readonly Event[], plan: CutPlan, available: number): number {
  let start = 0;
  ordered.forEach((e, i) => {
    if (e.payload?.$case === "spanModelRequestStart") start = advance(plan, start, i, available);
  });
  return advance(plan, start, ordered.length, available);
}
