/**
 * The "compaction" context strategy, the default for SDK sessions: the whole history while it
 * fits, and before a request would pass THRESHOLD of the window, a compaction appended to the log
 * (agent.thread_context_compacted). First context editing: tool results older than the last
 * KEEP_TOOL_RESULTS are cleared to a marker (no model call); when that does not bring the request
 * under LOW_WATER, the model is asked for a summary of the conversation, which replaces the older
 * turns, and the recent turns (KEEP_RECENT of the window) follow it whole. The model keeps
 * read_session_events to re-read anything by seq. Token counts are the estimate of messages.ts
 * (a request's JSON / 4), which is what the offline model counts too; a model that still says
 * "prompt is too long" gets a forced compaction and one retry (loop/compact-step.ts).
 */
import type Anthropic from "@anthropic-ai/sdk";
import { newEvent } from "@metaharness/events";
import type { Event, ModelUsage } from "@metaharness/proto";
import type { StreamParams } from "@metaharness/model-client";
import { compactedMessages, currentCompaction, isToolResult, visibleEvents, type Compaction } from "./compaction-view.js";
import { compactionSettings, MAX_COMPACTIONS_PER_TURN, type CompactionSettings } from "./compaction-settings.js";
import { estimateTokens } from "./messages.js";
import { systemWithBreakpoint } from "./replay.js";
import { READ_TOOL, READ_TOOL_NAME, readSessionEvents } from "./session-reader.js";
import type { ContextInput, ContextStrategy } from "./strategy.js";
import { fitTexts } from "./text-fit.js";
import { eventTokens, safeStarts } from "./window-cut.js";

const EPHEMERAL = { type: "ephemeral" } as const;

/** The instruction added to the last user turn of a summary request. */
export const SUMMARY_REQUEST =
  "[context compaction] The conversation is about to be shortened. Write a summary of it so far that lets you continue " +
  "the work without it: the user's requests, decisions taken, facts learned, files and commands that matter, what is " +
  `still open, and the seq numbers of events worth re-reading with ${READ_TOOL_NAME}. Reply with the summary only.`;

export interface SummaryAnswer {
  readonly text: string;
  readonly usage: ModelUsage;
}

/** Asks the model (the loop's client); the strategy stays free of I/O. */
export type Summarize = (params: StreamParams) => Promise<SummaryAnswer>;

function fixedPart(input: ContextInput): Omit<StreamParams, "messages"> {
  const withOwn = input.tools.some((t) => t.name === READ_TOOL_NAME) ? input.tools : [...input.tools, READ_TOOL];
  const tools = withOwn.map((t, i) => (i === withOwn.length - 1 ? { ...t, cache_control: EPHEMERAL } : t));
  const system = systemWithBreakpoint(input.agent?.system ?? "");
  return {
    ...(system === undefined ? {} : { system }),
    tools,
    ...(input.agent?.model ? { model: input.agent.model } : {}),
    ...(input.agent?.maxTokens ? { max_tokens: input.agent.maxTokens } : {}),
  };
}

function paramsUnder(input: ContextInput, c: Compaction): StreamParams {
  return { ...fixedPart(input), messages: compactedMessages(input.events, c) };
}

export function sizeOf(params: StreamParams): number {
  return estimateTokens(params);
}

/**
 * The compaction that makes room, or undefined when the request fits (and `force` is off).
 * Context editing first; a summary only when editing leaves the request over the low-water mark.
 */
export async function compact(input: ContextInput, settings: CompactionSettings, force: boolean, summarize: Summarize): Promise<Event | undefined> {
  const current = currentCompaction(input.events);
  const before = sizeOf(paramsUnder(input, current));
  if (!force && before <= settings.thresholdTokens) return undefined;
  const results = visibleEvents(input.events, current).filter(isToolResult);
  const keepFrom = results[results.length - settings.keepToolResults - 1];
  const edited: Compaction = { ...current, clearedThroughSeq: Math.max(current.clearedThroughSeq, keepFrom?.seq ?? 0) };
  const afterEdit = sizeOf(paramsUnder(input, edited));
  if (!force && edited.clearedThroughSeq > current.clearedThroughSeq && afterEdit <= settings.lowWaterTokens) {
    return compactedEvent(edited, before, afterEdit, undefined);
  }
  const throughSeq = cutPoint(visibleEvents(input.events, edited), settings.keepRecentTokens);
  if (throughSeq <= edited.throughSeq) {
    // Nothing older to summarize (one huge turn): the request builder cuts its longest texts.
    return edited.clearedThroughSeq > current.clearedThroughSeq ? compactedEvent(edited, before, afterEdit, undefined) : undefined;
  }
  const answer = await summarize(summaryRequest(input, edited, settings));
  const next: Compaction = { throughSeq, summary: answer.text.trim() || "(the model gave no summary)", clearedThroughSeq: Math.max(edited.clearedThroughSeq, throughSeq) };
  return compactedEvent(next, before, sizeOf(paramsUnder(input, next)), answer.usage);
}

function compactedEvent(c: Compaction, before: number, after: number, usage: ModelUsage | undefined): Event {
  return newEvent("agent.thread_context_compacted", {
    throughSeq: c.throughSeq,
    summary: c.summary,
    clearedThroughSeq: c.clearedThroughSeq,
    tokensBefore: before,
    tokensAfter: after,
    summaryUsage: usage ?? { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 },
  });
}

/**
 * The seq the summary covers: the last event before the first safe start (no tool call open
 * across it) from which the recent events fit `keep`; failing that, before the last safe start.
 */
export function cutPoint(visible: readonly Event[], keep: number): number {
  const safe = safeStarts(visible);
  const suffix: number[] = new Array<number>(visible.length + 1).fill(0);
  for (let i = visible.length - 1; i >= 0; i--) suffix[i] = (suffix[i + 1] ?? 0) + eventTokens(visible[i]!);
  let last: number | undefined;
  for (let s = 1; s < visible.length; s++) {
    if (!safe[s]) continue;
    last = s;
    if ((suffix[s] ?? 0) <= keep) break;
  }
  if (last === undefined) return 0;
  return Math.max(...visible.slice(0, last).map((e) => e.seq));
}

/** The request as it would be sent, plus the instruction: its prefix is read from the cache. */
function summaryRequest(input: ContextInput, c: Compaction, settings: CompactionSettings): StreamParams {
  const params = paramsUnder(input, c);
  const messages = params.messages.map((m) => ({ ...m }));
  const last = messages[messages.length - 1];
  const ask: Anthropic.TextBlockParam = { type: "text", text: SUMMARY_REQUEST };
  if (last?.role === "user" && Array.isArray(last.content)) last.content = [...last.content, ask];
  else messages.push({ role: "user", content: [ask] });
  const limit = Math.floor(settings.windowTokens * 0.9);
  const fits = (m: Anthropic.MessageParam[]): boolean => sizeOf({ ...params, messages: m }) <= limit;
  return { ...params, messages: fits(messages) ? messages : fitTexts(messages, fits) };
}

/** The request under the compaction in force, unless it passes the threshold (then undefined: compact first). */
function requestIfFits(input: ContextInput): StreamParams | undefined {
  const params = paramsUnder(input, currentCompaction(input.events));
  // The threshold is below the window, so build() would send these params as they are.
  return sizeOf(params) > compactionSettings(input.agent).thresholdTokens ? undefined : params;
}

export const compactionStrategy: ContextStrategy = {
  name: "compaction",
  ownTools: [READ_TOOL],
  compaction: {
    maxInARow: MAX_COMPACTIONS_PER_TURN,
    needed: (input) => requestIfFits(input) === undefined,
    requestIfFits,
    run: (input, force, summarize, modelMaximum) => compact(input, compactionSettings(input.agent, modelMaximum), force, summarize),
  },
  build(input: ContextInput): StreamParams {
    const settings = compactionSettings(input.agent);
    const params = paramsUnder(input, currentCompaction(input.events));
    // Even after compacting, one huge recent message or tool result: cut the longest texts.
    if (sizeOf(params) <= settings.windowTokens) return params;
    return { ...params, messages: fitTexts(params.messages, (m) => sizeOf({ ...params, messages: m }) <= settings.windowTokens) };
  },
  runOwnTool(name, input, log) {
    if (name !== READ_TOOL_NAME) return Promise.resolve({ output: `unknown tool "${name}"`, isError: true });
    return readSessionEvents(input, log);
  },
};
