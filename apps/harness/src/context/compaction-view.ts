/**
 * What the model sees of a compacted session. The last agent.thread_context_compacted event says
 * it: the events up to its through_seq are replaced by its summary (a synthetic first user turn
 * that says how to read them back), and the tool results up to its cleared_through_seq are
 * replaced by a marker naming their seq (context editing). Everything is a pure function of the
 * log, so a fresh harness after a crash builds the same request. Cache breakpoints: the tools and
 * the system prompt (stable for the whole session), the summary (stable until the next
 * compaction) and the tail (the previous request's prefix).
 */
import type Anthropic from "@anthropic-ai/sdk";
import { newEvent } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import { modelOrder, orderedMessages } from "./messages.js";
import { withTailBreakpoint } from "./replay.js";
import { READ_TOOL_NAME } from "./session-reader.js";

const EPHEMERAL = { type: "ephemeral" } as const;

export interface Compaction {
  readonly throughSeq: number;
  readonly summary: string;
  readonly clearedThroughSeq: number;
}

export const NO_COMPACTION: Compaction = { throughSeq: 0, summary: "", clearedThroughSeq: 0 };

/** The compaction in force: the last agent.thread_context_compacted event's. */
export function currentCompaction(events: readonly Event[]): Compaction {
  for (let i = events.length - 1; i >= 0; i--) {
    const p = events[i]?.payload;
    if (p?.$case === "agentThreadContextCompacted") {
      return { throughSeq: Number(p.value.throughSeq), summary: p.value.summary, clearedThroughSeq: Number(p.value.clearedThroughSeq) };
    }
  }
  return NO_COMPACTION;
}

export function isToolResult(e: Event): boolean {
  const c = e.payload?.$case;
  return c === "agentToolResult" || c === "agentMcpToolResult" || c === "userToolResult" || c === "userCustomToolResult";
}

export function clearedMarker(seq: number): string {
  return `[tool result cleared from the context to save space: read it back with ${READ_TOOL_NAME} {"after_seq": ${seq - 1}, "limit": 1}]`;
}

/** The event with its output replaced by the marker (a copy; other events as they are). */
function cleared(e: Event): Event {
  const p = e.payload;
  const content = [{ block: { $case: "text" as const, value: { text: clearedMarker(e.seq) } } }];
  switch (p?.$case) {
    case "agentToolResult":
      return { ...e, payload: { $case: p.$case, value: { ...p.value, content } } };
    case "agentMcpToolResult":
      return { ...e, payload: { $case: p.$case, value: { ...p.value, content } } };
    case "userToolResult":
      return { ...e, payload: { $case: p.$case, value: { ...p.value, content } } };
    case "userCustomToolResult":
      return { ...e, payload: { $case: p.$case, value: { ...p.value, content } } };
    default:
      return e;
  }
}

export function summaryText(c: Compaction): string {
  return (
    `[context summary] Events 1 to ${c.throughSeq} of this session are summarized here; they are still in the session log: ` +
    `call ${READ_TOOL_NAME} (e.g. {"after_seq": 0} from the start) to re-read any of them by seq before you rely on them.\n\n${c.summary}`
  );
}

/** The events the model sees under `c`, in model order, tool results cleared as it says. */
export function visibleEvents(events: readonly Event[], c: Compaction): Event[] {
  return modelOrder(events)
    .filter((e) => e.seq > c.throughSeq)
    .map((e) => (isToolResult(e) && e.seq <= c.clearedThroughSeq ? cleared(e) : e));
}

/** The conversation under `c`, with the summary's and the tail's cache breakpoints. */
export function compactedMessages(events: readonly Event[], c: Compaction): Anthropic.MessageParam[] {
  // In model order already (visibleEvents): not ordered again.
  const visible = visibleEvents(events, c);
  if (c.throughSeq === 0) return withTailBreakpoint(orderedMessages(visible));
  const text = summaryText(c);
  const lead = newEvent("user.message", { content: [{ block: { $case: "text", value: { text } } }] });
  const messages = withTailBreakpoint(orderedMessages([lead, ...visible]));
  const first = messages[0];
  if (first !== undefined && Array.isArray(first.content)) {
    first.content = first.content.map((b) => (b.type === "text" && b.text === text && !("cache_control" in b) ? { ...b, cache_control: EPHEMERAL } : b));
  }
  return messages;
}
