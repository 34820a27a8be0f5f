/**
 * A session as it happens, for a terminal: the agent's text token by token (from the stream's
 * event_delta previews, or whole when no preview came), each tool call with a spinner and its
 * duration (terminals) or a start line (pipes), then its output shortened, sandbox lifecycle and
 * errors on their own lines. `handle` returns how the run ended once an event says so.
 */
import type { PriceTable } from "@metaharness/gateway";
import type { Ending } from "../exit-codes.js";
import type { BetaManagedAgentsStreamSessionEvents as StreamEvent } from "@anthropic-ai/sdk/resources/beta/sessions/events";
import { Screen } from "./screen.js";
import { clip, duration, style, type Style } from "./style.js";
import { Tally } from "./tally.js";
import { abbreviate, contentText, toolLabel } from "./tools.js";
import type { Output } from "../output.js";

interface PendingTool {
  readonly label: string;
  /** By the server's clock (processed_at), for the duration shown when it is done. */
  readonly startedAt: number;
  /** By ours, for the spinner's running time. */
  readonly seenAt: number;
}

type Loose = Record<string, unknown>;

const str = (e: Loose, key: string): string => (typeof e[key] === "string" ? e[key] : "");
const obj = (e: Loose, key: string): Loose => (typeof e[key] === "object" && e[key] !== null ? (e[key] as Loose) : {});

/** When the event happened by the server's clock (so replayed events get true durations). */
function timeOf(e: Loose): number {
  const at = Date.parse(str(e, "processed_at"));
  return Number.isNaN(at) ? Date.now() : at;
}

export class LiveRenderer {
  readonly tally: Tally;
  /** The model of the request under way (span.model_request_start), to price its usage. */
  private model: string | undefined;
  private readonly screen: Screen;
  private readonly s: Style;
  private readonly pending = new Map<string, PendingTool>();
  /** When the last tool finished: the harness runs a response's calls one after another. */
  private lastToolDoneAt = 0;
  private lastToolDoneSeen = 0;
  /** Text streamed so far per previewed message id. */
  private readonly previews = new Map<string, string>();

  constructor(
    private readonly out: Output,
    prices?: PriceTable,
  ) {
    this.tally = new Tally(prices);
    this.screen = new Screen(out);
    this.s = style(out.color);
  }

  /** Renders one event; returns how the run ended when this event ends it. */
  handle(event: StreamEvent): Ending | undefined {
    const e = event as unknown as Loose;
    const type = event.type as string;
    switch (type) {
      case "user.message":
        this.screen.gap();
        this.screen.line(this.s.bold(`› ${clip(contentText(e["content"]), this.out.columns - 2)}`));
        return undefined;
      case "user.interrupt":
        this.screen.line(this.s.yellow("⏹ interrupt sent"));
        return undefined;
      case "span.model_request_start":
        this.model = str(e, "model") || undefined;
        this.screen.spin(() => this.s.dim("the model is working…"));
        return undefined;
      case "event_start": {
        const preview = obj(e, "event");
        if (str(preview, "type") === "agent.message") {
          this.previews.set(str(preview, "id"), "");
          this.screen.stopSpinner();
          this.screen.gap();
        }
        else this.screen.spin(() => this.s.dim("thinking…"));
        return undefined;
      }
      case "event_delta": {
        const id = str(e, "event_id");
        const text = str(obj(obj(e, "delta"), "content"), "text");
        this.previews.set(id, (this.previews.get(id) ?? "") + text);
        this.screen.text(text);
        return undefined;
      }
      case "agent.message":
        this.message(str(e, "id"), contentText(e["content"]));
        return undefined;
      case "agent.thinking": {
        const thought = str(e, "thinking");
        this.screen.line(this.s.dim(`∴ ${thought === "" ? "thinking" : clip(thought, this.out.columns - 4)}`));
        return undefined;
      }
      case "agent.tool_use":
      case "agent.mcp_tool_use":
        this.toolStarted(str(e, "id"), str(e, "name"), obj(e, "input"), timeOf(e));
        return undefined;
      case "agent.custom_tool_use":
        this.screen.line(this.s.yellow(`▸ ${toolLabel(str(e, "name"), obj(e, "input"), this.out.columns - 4)}  (a custom tool: the client answers it)`));
        return undefined;
      case "agent.tool_result":
        this.toolDone(str(e, "tool_use_id"), e, timeOf(e));
        return undefined;
      case "agent.mcp_tool_result":
        this.toolDone(str(e, "mcp_tool_use_id"), e, timeOf(e));
        return undefined;
      case "span.model_request_end":
        this.screen.stopSpinner();
        this.tally.addUsage(e["model_usage"], this.model);
        return undefined;
      case "sandbox.provisioned":
        this.note(`◆ sandbox ${str(e, "sandbox_id")} ready (${str(e, "driver") || "?"}, ${duration(Number(e["duration_ms"] ?? 0))})`);
        return undefined;
      case "sandbox.released":
        this.note(`◇ sandbox ${str(e, "sandbox_id")} released (${str(e, "reason")})`);
        return undefined;
      case "sandbox.lost":
        this.screen.line(this.s.yellow(`◇ sandbox ${str(e, "sandbox_id")} lost: ${str(e, "reason")}`));
        return undefined;
      case "session.error": {
        const error = obj(e, "error");
        const retry = str(obj(error, "retry_status"), "type");
        this.screen.line(this.s.red(`! ${str(error, "type")}: ${str(error, "message")}${retry === "" ? "" : ` (${retry})`}`));
        return undefined;
      }
      case "session.status_idle":
        return this.idle(obj(e, "stop_reason"));
      case "session.status_terminated":
        this.finish();
        this.screen.line(this.s.red("session terminated"));
        return "terminated";
      default:
        return undefined;
    }
  }

  /** Clears the spinner and ends any streamed line; call before printing after the run. */
  finish(): void {
    this.screen.stopSpinner();
    this.screen.closeText();
  }

  /** A line for notes of the CLI itself, kept apart from the stream's text. */
  note(text: string): void {
    this.screen.line(this.s.dim(text));
  }

  private message(id: string, text: string): void {
    const streamed = this.previews.get(id);
    this.previews.delete(id);
    this.screen.stopSpinner();
    if (streamed !== undefined && text.startsWith(streamed)) this.screen.text(text.slice(streamed.length));
    else {
      this.screen.gap();
      this.screen.text(text);
    }
    this.screen.closeText();
  }

  private toolStarted(id: string, name: string, input: Loose, at: number): void {
    const label = toolLabel(name, input, this.out.columns - 14);
    this.pending.set(id, { label, startedAt: at, seenAt: Date.now() });
    if (!this.out.tty) {
      this.screen.line(`▸ ${label}`);
      return;
    }
    this.screen.spin(() => {
      const [first] = this.pending.values();
      if (first === undefined) return "";
      const more = this.pending.size > 1 ? this.s.dim(` (+${this.pending.size - 1} queued)`) : "";
      const since = Math.max(first.seenAt, this.lastToolDoneSeen);
      return `${first.label}  ${this.s.dim(duration(Math.max(Date.now() - since, 0)))}${more}`;
    });
  }

  private toolDone(toolUseId: string, e: Loose, at: number): void {
    const started = this.pending.get(toolUseId);
    this.pending.delete(toolUseId);
    const isError = e["is_error"] === true;
    this.tally.addTool(isError);
    if (this.pending.size === 0) this.screen.stopSpinner();
    const mark = isError ? this.s.red("✗") : this.s.green("✓");
    const since = started === undefined ? at : Math.max(started.startedAt, this.lastToolDoneAt);
    this.lastToolDoneAt = at;
    this.lastToolDoneSeen = Date.now();
    const took = started === undefined ? "" : this.s.dim(duration(Math.max(at - since, 0)));
    this.screen.line(`${mark} ${started?.label ?? toolUseId}  ${took}`);
    for (const l of abbreviate(contentText(e["content"]), this.out.columns - 4)) this.screen.line(this.s.dim(`  │ ${l}`));
  }

  private idle(stopReason: Loose): Ending {
    this.finish();
    const type = str(stopReason, "type");
    switch (type) {
      case "end_turn":
      case "requires_action":
      case "budget_reached":
      case "retries_exhausted":
      case "refusal":
      case "interrupted":
        if (type === "requires_action") {
          const ids = Array.isArray(stopReason["event_ids"]) ? (stopReason["event_ids"] as unknown[]).map(String) : [];
          this.screen.line(this.s.yellow(`waiting for the client on ${ids.join(", ") || "?"} (a tool confirmation or custom tool result)`));
        }
        return type;
      default:
        this.screen.line(this.s.yellow(`stopped for a reason this mh does not know: ${type || "(none)"}`));
        return "unknown";
    }
  }
}
