/**
 * What a run adds up to: model requests and their token usage (from span.model_request_end),
 * tool calls and how many failed, and the one summary line printed at the end.
 */
import type { Ending } from "../exit-codes.js";
import { count, duration, type Style } from "./style.js";

export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export class Tally {
  readonly usage: Usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  modelRequests = 0;
  toolCalls = 0;
  toolErrors = 0;

  /** Adds a span.model_request_end's model_usage. */
  addUsage(usage: unknown): void {
    this.modelRequests += 1;
    if (typeof usage !== "object" || usage === null) return;
    const u = usage as Record<string, unknown>;
    const n = (key: string) => (typeof u[key] === "number" ? u[key] : 0);
    this.usage.input += n("input_tokens");
    this.usage.output += n("output_tokens");
    this.usage.cacheRead += n("cache_read_input_tokens");
    this.usage.cacheWrite += n("cache_creation_input_tokens");
  }

  addTool(isError: boolean): void {
    this.toolCalls += 1;
    if (isError) this.toolErrors += 1;
  }

  /** "end_turn · 7 tool calls (2 failed) · 6 model requests · tokens in 4,210 (cache read 3,100) · out 380 · 6.1 s" */
  summary(ending: Ending, wallMs: number, s: Style): string {
    const reason = ending === "end_turn" ? s.green(ending) : ending === "interrupted" ? s.yellow(ending) : s.red(ending);
    const tools = `${this.toolCalls} tool call${this.toolCalls === 1 ? "" : "s"}${this.toolErrors > 0 ? ` (${this.toolErrors} failed)` : ""}`;
    const requests = `${this.modelRequests} model request${this.modelRequests === 1 ? "" : "s"}`;
    const cache = [
      this.usage.cacheRead > 0 ? `cache read ${count(this.usage.cacheRead)}` : "",
      this.usage.cacheWrite > 0 ? `cache write ${count(this.usage.cacheWrite)}` : "",
    ].filter((x) => x !== "");
    const tokens = `tokens in ${count(this.usage.input)}${cache.length > 0 ? ` (${cache.join(", ")})` : ""} · out ${count(this.usage.output)}`;
    return `── ${reason} · ${tools} · ${requests} · ${tokens} · ${duration(wallMs)}`;
  }
}
