/**
 * From a step to the complete assistant message it answers with, before any framing: which blocks
 * (thinking only when the request turns it on; a short one is made up for a tool call, since the
 * real API then requires it back), the deterministic ids, the stop reason (stop sequences and
 * max_tokens cut the output like the real model's would) and the output usage. Streaming and JSON
 * responses are both renderings of this one message.
 */
import { ApiError } from "./api-error.js";
import { deterministicId, signThinking } from "./ids.js";
import type { InputUsage } from "./prompt-cache.js";
import type { StepSpec } from "./scenario.js";
import { CHARS_PER_TOKEN, estimateTokens } from "./segments.js";
import type { ContentBlock, Message, MessagesRequest, StopReason } from "./wire.js";

export interface PlanInput {
  readonly request: MessagesRequest;
  readonly spec: StepSpec;
  readonly fingerprint: string;
  readonly inputUsage: InputUsage;
  /** For messages about the scenario itself: `scenario "x" step 2`. */
  readonly where: string;
}

interface Draft {
  readonly kind: "thinking" | "text" | "tool_use";
  readonly text: string;
  readonly name?: string;
  readonly input?: Readonly<Record<string, unknown>>;
}

export function planMessage(p: PlanInput): Message {
  const { request, spec } = p;
  checkToolsExist(request, spec, p.where);
  const thinkingOn = request.thinking?.type === "enabled" || request.thinking?.type === "adaptive";
  const toolUses = spec.toolUses ?? [];
  const thinking = spec.thinking ?? (toolUses.length > 0 ? `I should use ${toolUses.map((u) => u.name).join(" and ")}.` : undefined);
  const drafts: Draft[] = [
    ...(thinkingOn && thinking !== undefined ? [{ kind: "thinking" as const, text: thinking }] : []),
    ...(spec.text !== undefined && spec.text !== "" ? [{ kind: "text" as const, text: spec.text }] : []),
    ...toolUses.map((u) => ({ kind: "tool_use" as const, text: JSON.stringify(u.input), name: u.name, input: u.input })),
  ];
  let stopReason: StopReason = spec.stopReason ?? (toolUses.length > 0 ? "tool_use" : "end_turn");
  let stopSequence: string | null = null;
  let budget = request.max_tokens;
  const content: ContentBlock[] = [];
  let outputTokens = 0;
  let thinkingTokens = 0;

  for (const draft of drafts) {
    let text = draft.text;
    if (draft.kind === "text") {
      const cut = firstStop(text, request.stop_sequences ?? []);
      if (cut !== undefined) [text, stopSequence] = [text.slice(0, cut.at), cut.sequence];
    }
    const tokens = estimateTokens(text.length);
    if (tokens > budget) {
      stopReason = "max_tokens";
      stopSequence = null;
      if (draft.kind !== "tool_use" && budget > 0) {
        const kept = text.slice(0, budget * CHARS_PER_TOKEN);
        content.push(blockOf(draft, kept, p, content.length));
        outputTokens += budget;
        if (draft.kind === "thinking") thinkingTokens += budget;
      }
      break;
    }
    budget -= tokens;
    outputTokens += tokens;
    if (draft.kind === "thinking") thinkingTokens += tokens;
    content.push(blockOf(draft, text, p, content.length));
    if (stopSequence !== null) {
      stopReason = "stop_sequence";
      break;
    }
  }
  return {
    id: deterministicId("msg", p.fingerprint),
    type: "message",
    role: "assistant",
    model: request.model,
    content,
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: {
      ...p.inputUsage,
      output_tokens: Math.max(1, outputTokens),
      output_tokens_details: thinkingTokens > 0 ? { thinking_tokens: thinkingTokens } : null,
      server_tool_use: null,
      service_tier: "standard",
      inference_geo: null,
      speed: null,
    },
  };
}

function blockOf(draft: Draft, text: string, p: PlanInput, index: number): ContentBlock {
  switch (draft.kind) {
    case "thinking": {
      const shown = p.request.thinking?.type !== "disabled" && p.request.thinking?.display === "omitted" ? "" : text;
      return { type: "thinking", thinking: shown, signature: signThinking(shown) };
    }
    case "text":
      return { type: "text", text, citations: null };
    case "tool_use":
      return {
        type: "tool_use",
        id: deterministicId("toolu", `${p.fingerprint}\n${index}`),
        name: draft.name ?? "",
        input: draft.input ?? {},
        caller: { type: "direct" },
      };
  }
}

function firstStop(text: string, sequences: readonly string[]): { at: number; sequence: string } | undefined {
  let best: { at: number; sequence: string } | undefined;
  for (const sequence of sequences) {
    const at = text.indexOf(sequence);
    if (at !== -1 && (best === undefined || at < best.at)) best = { at, sequence };
  }
  return best;
}

/** A step cannot call a tool the request does not offer: the real model could not either. */
export function checkToolsExist(request: MessagesRequest, spec: StepSpec, where: string): void {
  const offered = (request.tools ?? []).map((t) => t.name);
  for (const use of spec.toolUses ?? []) {
    if (!offered.includes(use.name)) {
      throw new ApiError(
        400,
        `offline ${where} calls tool "${use.name}", which the request does not define (tools: ${offered.join(", ") || "none"})`,
      );
    }
  }
}
