/**
 * One session as a timeline of its events, built as they arrive. Most events are a row of
 * their own; some complete an earlier row instead, so a reader sees one thing per action:
 * a tool call's result, confirmation and duration go into the call's card, and a model
 * request's end (usage, duration, stop reason) into the row of its start. Token previews
 * show as a row that the stored message replaces. Every event shows its seq, time and a link
 * to its trace.
 */
import type { UiEventJson } from "./wire.js";
import { append, h } from "./dom.js";
import { between, describeSize, formatClock, formatDuration, formatTokens, prettyJson, traceUrl } from "./format.js";
import { formatUsd, type PriceTable } from "./prices.js";
import { blocksText, breakable, longText, toolInput } from "./text-views.js";
import { costText, inputText } from "./usage-view.js";

/** What the filters of the page hide or show. */
export const CATEGORIES = {
  message: "Messages",
  tool: "Tool calls",
  model: "Model requests",
  status: "Status",
  sandbox: "Sandbox",
  error: "Errors",
} as const;
export type Category = keyof typeof CATEGORIES;

/** Rows kept in the page; beyond it the oldest go, TRIM_BATCH at a time (reload to see them). */
export const MAX_ROWS = 5000;
const TRIM_BATCH = 500;

interface ToolCard {
  readonly card: HTMLElement;
  readonly state: HTMLElement;
  readonly output: HTMLElement;
  readonly at: string | null;
}

interface ModelRow {
  readonly stats: HTMLElement;
  readonly at: string | null;
  readonly model: string;
  readonly seq: number;
}

type EventOf<T extends UiEventJson["type"]> = Extract<UiEventJson, { type: T }>;

export class Timeline {
  readonly list: HTMLOListElement;
  private readonly traceSlots = new Map<number, HTMLElement>();
  private readonly thinkingSlots = new Map<number, HTMLElement>();
  private readonly tools = new Map<string, ToolCard>();
  private readonly models = new Map<string, ModelRow>();
  private readonly previews = new Map<string, { readonly row: HTMLLIElement; readonly text: HTMLElement }>();
  private newest: string | null = null;
  /** The seq of the latest user.interrupt: a model request it cut short ended "failed" in the log, but was stopped, not broken. */
  private lastInterrupt = 0;

  constructor(
    private readonly traceTemplate: string,
    private readonly prices: PriceTable,
  ) {
    this.list = h("ol", { class: "timeline", "aria-label": "Events, oldest first" });
  }

  /** When the newest event shown was appended. */
  get lastActivity(): string | null {
    return this.newest;
  }

  /** A stored event after every one shown (history in order, then live). */
  append(event: UiEventJson): void {
    this.note(event);
    const row = this.render(event);
    if (row === undefined) return;
    const preview = this.previews.get(event.id);
    if (preview !== undefined) {
      this.previews.delete(event.id);
      preview.row.replaceWith(row);
    } else {
      this.list.append(row);
    }
    this.trim();
  }

  /** Older events (in seq order), above every one shown. */
  prepend(events: readonly UiEventJson[]): void {
    const rows = document.createDocumentFragment();
    for (const event of events) {
      this.note(event);
      const row = this.render(event);
      if (row !== undefined) rows.append(row);
    }
    this.list.prepend(rows);
  }

  /** Fills in what only the page's own route knows: the trace link and thinking text. */
  enrich(event: UiEventJson): void {
    const slot = this.traceSlots.get(event.seq);
    if (slot !== undefined && slot.childElementCount === 0) append(slot, this.traceLink(event));
    const thinking = this.thinkingSlots.get(event.seq);
    if (thinking !== undefined && event.thinking !== undefined) {
      this.thinkingSlots.delete(event.seq);
      thinking.replaceWith(this.thinking(event.thinking));
    }
  }

  previewStart(id: string, type: string): void {
    if (this.previews.has(id)) return;
    const agent = type === "agent.message";
    const text = h("div", { class: "msg__text" });
    const row = h(
      "li",
      { class: `ev ev--preview ${agent ? "ev--agent" : "ev--thinking"}`, "data-kind": "message", "data-preview-id": id },
      h("div", { class: "ev__meta" }, h("span", { class: "ev__type" }, agent ? "streaming…" : "thinking…")),
      h("div", { class: "ev__main" }, agent ? h("div", { class: "msg msg--agent" }, h("div", { class: "msg__who" }, "Agent"), text) : h("p", { class: "muted" }, "Thinking…")),
    );
    this.previews.set(id, { row, text });
    this.list.append(row);
  }

  previewDelta(id: string, text: string): void {
    const preview = this.previews.get(id);
    if (preview !== undefined) append(preview.text, text);
  }

  private note(event: UiEventJson): void {
    if (event.processed_at !== null && (this.newest === null || event.processed_at > this.newest)) this.newest = event.processed_at;
  }

  /** Past MAX_ROWS, drops the oldest rows (a batch at a time) and what refers to them. */
  private trim(): void {
    if (this.list.childElementCount <= MAX_ROWS) return;
    while (this.list.childElementCount > MAX_ROWS - TRIM_BATCH) this.list.firstElementChild?.remove();
    for (const map of [this.traceSlots, this.thinkingSlots]) for (const [seq, el] of map) if (!el.isConnected) map.delete(seq);
    for (const [id, tool] of this.tools) if (!tool.card.isConnected) this.tools.delete(id);
    for (const [id, model] of this.models) if (!model.stats.isConnected) this.models.delete(id);
  }

  private traceLink(event: UiEventJson): HTMLElement | undefined {
    const url = traceUrl(this.traceTemplate, event.trace_id, event.span_id);
    if (url === undefined) return undefined;
    // The gateway's own trace page opens in this tab (Back returns here); another tool in a new one.
    const external = !url.startsWith("/");
    return h(
      "a",
      { class: "trace-link", href: url, target: external ? "_blank" : undefined, rel: external ? "noopener noreferrer" : undefined, title: `Trace ${event.trace_id ?? ""}`, "data-trace-id": event.trace_id },
      "trace",
    );
  }

  /** seq anchor, time, type and trace link of an event. */
  private meta(event: UiEventJson, className = "ev__meta"): HTMLElement {
    const slot = h("span", { class: "ev__trace" }, this.traceLink(event));
    this.traceSlots.set(event.seq, slot);
    return h(
      "div",
      // A merged event has no row: its anchor is here.
      { class: className, id: className === "ev__meta" ? undefined : `ev-${event.seq}` },
      h("span", { class: "ev__line" }, h("a", { class: "ev__seq", href: `#ev-${event.seq}`, title: `seq ${event.seq}, id ${event.id}` }, `#${event.seq}`), slot),
      h("time", { datetime: event.processed_at ?? undefined, title: event.processed_at ?? undefined }, formatClock(event.processed_at)),
      h("span", { class: "ev__type" }, ...breakable(event.type)),
    );
  }

  private row(event: UiEventJson, kind: string, category: Category, ...main: Array<Node | string | undefined>): HTMLLIElement {
    return h(
      "li",
      { class: `ev ev--${kind}`, id: `ev-${event.seq}`, "data-kind": category, "data-type": event.type, "data-seq": event.seq },
      this.meta(event),
      h("div", { class: "ev__main" }, ...main),
    );
  }

  private thinking(text: string): HTMLElement {
    return h("details", { class: "thinking" }, h("summary", {}, `Thinking (${describeSize(text)})`), h("pre", { class: "prose" }, text));
  }

  private render(event: UiEventJson): HTMLLIElement | undefined {
    switch (event.type) {
      case "user.message":
        return this.row(event, "user", "message", h("div", { class: "msg msg--user" }, h("div", { class: "msg__who" }, "User"), h("div", { class: "msg__text" }, blocksText(event.content))));
      case "agent.message":
        return this.row(event, "agent", "message", h("div", { class: "msg msg--agent" }, h("div", { class: "msg__who" }, "Agent"), h("div", { class: "msg__text" }, blocksText(event.content))));
      case "agent.thinking": {
        if (event.thinking !== undefined) return this.row(event, "thinking", "message", this.thinking(event.thinking));
        const slot = h("p", { class: "muted" }, "Thinking…");
        this.thinkingSlots.set(event.seq, slot);
        return this.row(event, "thinking", "message", slot);
      }
      case "agent.tool_use":
        return this.toolCall(event, event.name, event.input, ["sandbox", event.sandbox_id === undefined ? undefined : `sandbox ${event.sandbox_id}`], event.evaluated_permission);
      case "agent.mcp_tool_use":
        return this.toolCall(event, event.name, event.input, [`mcp: ${event.mcp_server_name}`], event.evaluated_permission);
      case "agent.custom_tool_use":
        return this.toolCall(event, event.name, event.input, ["custom (the client runs it)"], undefined);
      case "agent.tool_result":
        return this.toolResult(event, event.tool_use_id, blocksText(event.content), event.is_error, event.exit_code);
      case "user.tool_result":
        return this.toolResult(event, event.tool_use_id, blocksText(event.content), event.is_error);
      case "agent.mcp_tool_result":
        return this.toolResult(event, event.mcp_tool_use_id, blocksText(event.content), event.is_error);
      case "user.custom_tool_result":
        return this.toolResult(event, event.custom_tool_use_id, blocksText(event.content), event.is_error);
      case "user.tool_confirmation":
        return this.confirmation(event);
      case "user.interrupt":
        this.lastInterrupt = Math.max(this.lastInterrupt, event.seq);
        return this.row(event, "interrupt", "status", h("div", { class: "status status--warn" }, "Interrupted by the user"));
      case "session.status_running":
        return this.row(event, "status", "status", h("div", { class: "status status--running" }, "Running"));
      case "session.status_idle":
        return this.row(event, "status", "status", h("div", { class: "status status--idle" }, `Idle · ${this.stopReason(event)}`));
      case "session.status_terminated":
        return this.row(event, "status", "status", h("div", { class: "status status--terminated" }, "Terminated"));
      case "session.error":
        return this.row(
          event,
          "error",
          "error",
          h(
            "div",
            { class: "error-box", role: "note" },
            h("div", { class: "error-box__head" }, h("strong", {}, "Error"), " ", h("code", {}, event.error.type), " ", h("span", { class: `tag tag--${event.error.retry_status.type}` }, event.error.retry_status.type)),
            longText(event.error.message || "(no message)", "prose"),
          ),
        );
      case "session.usage": {
        const cents = (amount: string | undefined): string | undefined => (amount === undefined ? undefined : formatUsd(Number(amount) / 100));
        const cost = cents(event.usage.list_cost?.amount);
        const budget = cents(event.budget?.max_list_cost.amount);
        const spent = cost === undefined ? "no list price" : `${cost} at list prices`;
        return this.row(event, "status", "status", h("div", { class: "status" }, `Usage · ${spent}${budget === undefined ? "" : ` of a ${budget} budget`}`));
      }
      case "session.updated": {
        const fields = (["budget", "title", "metadata", "agent"] as const).filter((f) => f in event);
        return this.row(event, "status", "status", h("div", { class: "status" }, `Session updated · ${fields.join(", ") || "metadata cleared"}`));
      }
      case "span.model_request_start":
        return this.modelStart(event);
      case "span.model_request_end":
        return this.modelEnd(event);
      case "sandbox.provisioned":
        return this.row(event, "sandbox", "sandbox", h("div", { class: "sandbox" }, "Sandbox provisioned ", h("code", {}, event.sandbox_id), ` · ${event.driver} · ${formatDuration(event.duration_ms)}`));
      case "sandbox.released":
        return this.row(event, "sandbox", "sandbox", h("div", { class: "sandbox" }, "Sandbox released ", h("code", {}, event.sandbox_id), event.reason === "" ? "" : ` · ${event.reason}`));
      case "sandbox.lost":
        return this.row(event, "sandbox-lost", "error", h("div", { class: "sandbox sandbox--lost" }, h("strong", {}, "Sandbox lost "), h("code", {}, event.sandbox_id), event.reason === "" ? "" : ` · ${event.reason}`));
      default:
        return this.row(event, "other", "status", longText(prettyJson(event), "code"));
    }
  }

  private stopReason(event: EventOf<"session.status_idle">): string {
    const reason = event.stop_reason;
    switch (reason.type) {
      case "requires_action": {
        const n = reason.event_ids.length;
        return `waiting for the client (${n} tool ${n === 1 ? "call" : "calls"})`;
      }
      case "end_turn":
        return "end of turn";
      default:
        return reason.type.replaceAll("_", " ");
    }
  }

  private toolCall(
    event: UiEventJson,
    name: string,
    input: Record<string, unknown>,
    tags: ReadonlyArray<string | undefined>,
    permission: string | undefined,
  ): HTMLLIElement {
    const waiting = permission === "ask" ? "waiting for confirmation" : event.type === "agent.custom_tool_use" ? "waiting for the client" : "running…";
    const state = h("span", { class: "tool__state" }, waiting);
    const output = h("div", { class: "tool__output" });
    const card = h(
      "div",
      { class: "tool", "data-state": "pending" },
      h(
        "div",
        { class: "tool__head" },
        h("span", { class: "tool__label" }, "Tool call"),
        " ",
        h("code", { class: "tool__name" }, name),
        ...tags.filter((t): t is string => t !== undefined).map((t) => h("span", { class: "tag" }, t)),
        permission === undefined || permission === "allow" ? undefined : h("span", { class: `tag tag--${permission}` }, `permission: ${permission}`),
        state,
      ),
      h("div", { class: "tool__section" }, h("div", { class: "tool__title" }, "Input"), toolInput(name, input)),
      output,
    );
    this.tools.set(event.id, { card, state, output, at: event.processed_at });
    return this.row(event, "tool", "tool", card);
  }

  /** `exitCode`: how a command ended (bash), shown when it failed: "failed (exit 2) in 1.2 s". */
  private toolResult(event: UiEventJson, toolUseId: string, text: string, isError: boolean, exitCode?: number): HTMLLIElement | undefined {
    const exit = isError && exitCode !== undefined ? ` (exit ${exitCode})` : "";
    const body = text === "" ? h("p", { class: "muted" }, "(no output)") : longText(text, isError ? "code code--error" : "code");
    const tool = this.tools.get(toolUseId);
    if (tool === undefined) {
      // The call is older than the events shown.
      return this.row(event, "tool", "tool", h("div", { class: "tool", "data-state": isError ? "error" : "done" }, h("div", { class: "tool__title" }, `Result of ${toolUseId}${exit}`), body));
    }
    const took = between(tool.at, event.processed_at);
    tool.card.dataset["state"] = isError ? "error" : "done";
    tool.state.textContent = `${isError ? `failed${exit}` : "done"}${took === undefined ? "" : ` in ${formatDuration(took)}`}`;
    append(tool.output, h("div", { class: "tool__section" }, h("div", { class: "tool__title" }, isError ? "Error output" : "Output", this.meta(event, "sub-meta")), body));
    return undefined;
  }

  private confirmation(event: EventOf<"user.tool_confirmation">): HTMLLIElement | undefined {
    const text = event.result === "allow" ? "Allowed by the user" : `Denied by the user${event.deny_message === undefined ? "" : `: ${event.deny_message}`}`;
    const tool = this.tools.get(event.tool_use_id);
    if (tool === undefined) return this.row(event, "status", "tool", h("div", { class: "status" }, `${text} (${event.tool_use_id})`));
    if (event.result === "deny") tool.card.dataset["state"] = "error";
    tool.state.textContent = event.result === "allow" ? "running…" : "denied";
    append(tool.output, h("div", { class: "tool__section" }, h("div", { class: "tool__title" }, text, this.meta(event, "sub-meta"))));
    return undefined;
  }

  private modelStart(event: EventOf<"span.model_request_start">): HTMLLIElement {
    const stats = h("span", { class: "model__stats" }, "in progress…");
    this.models.set(event.id, { stats, at: event.processed_at, model: event.model, seq: event.seq });
    return this.row(event, "model", "model", h("div", { class: "model" }, h("span", { class: "model__label" }, "Model request"), " ", h("code", {}, event.model || "model"), " ", stats));
  }

  private modelEnd(event: EventOf<"span.model_request_end">): HTMLLIElement | undefined {
    // A request that ended without its message (an error, an interrupt): its previews go.
    for (const [id, preview] of this.previews) {
      if (id.startsWith(`${event.model_request_start_id}.`)) {
        preview.row.remove();
        this.previews.delete(id);
      }
    }
    const u = event.model_usage;
    const start = this.models.get(event.model_request_start_id);
    const cost = costText(this.prices, start?.model, u);
    const parts = [
      `in ${inputText(u)}`,
      `out ${formatTokens(u.output_tokens)}`,
      ...(cost === undefined ? [] : [cost]),
      ...(event.stop_reason === undefined ? [] : [`stop: ${event.stop_reason}`]),
    ];
    if (start === undefined) {
      return this.row(event, "model", "model", h("div", { class: "model" }, h("span", { class: "model__label" }, event.is_error ? "Model request failed" : "Model request ended"), " ", parts.join(" · ")));
    }
    const took = between(start.at, event.processed_at);
    // The harness ends a request the user interrupted as failed, with no error of its own.
    const interrupted = event.is_error && this.lastInterrupt > start.seq;
    start.stats.replaceChildren(
      interrupted ? h("strong", { class: "text-warn" }, "interrupted") : event.is_error ? h("strong", { class: "text-error" }, "failed") : "",
      event.is_error ? " · " : "",
      took === undefined ? "" : `${formatDuration(took)} · `,
      parts.join(" · "),
      this.meta(event, "sub-meta"),
    );
    if (event.is_error) start.stats.closest(".ev")?.classList.add(interrupted ? "ev--interrupted" : "ev--failed");
    return undefined;
  }
}
