/**
 * What a run adds up to: model requests and their token usage (from span.model_request_end),
 * with an estimated cost from the price table (each request at its model's price), tool calls
 * and how many failed, and the one summary line printed at the end.
 */
import { costUsd, DEFAULT_PRICES, formatUsd, type PriceTable } from "@metaharness/gateway";
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
  /** Estimated US dollars of the requests whose model has a price. */
  costUsd = 0;
  /** Requests with tokens whose model has no price: the cost then leaves them out, and says so. */
  unpriced = 0;

  constructor(private readonly prices: PriceTable = DEFAULT_PRICES) {}

  /** Adds a span.model_request_end's model_usage; `model`: that of its span.model_request_start. */
  addUsage(usage: unknown, model?: string): void {
    this.modelRequests += 1;
    if (typeof usage !== "object" || usage === null) return;
    const u = usage as Record<string, unknown>;
    const n = (key: string) => (typeof u[key] === "number" ? u[key] : 0);
    const request = { input_tokens: n("input_tokens"), output_tokens: n("output_tokens"), cache_read_input_tokens: n("cache_read_input_tokens"), cache_creation_input_tokens: n("cache_creation_input_tokens") };
    this.usage.input += request.input_tokens;
    this.usage.output += request.output_tokens;
    this.usage.cacheRead += request.cache_read_input_tokens;
    this.usage.cacheWrite += request.cache_creation_input_tokens;
    const cost = costUsd(this.prices, model, request);
    if (cost !== undefined) this.costUsd += cost;
    else if (Object.values(request).some((v) => v > 0)) this.unpriced += 1;
  }

  addTool(isError: boolean): void {
    this.toolCalls += 1;
    if (isError) this.toolErrors += 1;
  }

  /** "end_turn · 7 tool calls (2 failed) · 6 model requests · tokens in 7,310 (4,210 + cache read 3,100) · out 380 · ≈ $0.0123 · 6.1 s" */
  summary(ending: Ending, wallMs: number, s: Style): string {
    const reason = ending === "end_turn" ? s.green(ending) : ending === "interrupted" ? s.yellow(ending) : s.red(ending);
    const tools = `${this.toolCalls} tool call${this.toolCalls === 1 ? "" : "s"}${this.toolErrors > 0 ? ` (${this.toolErrors} failed)` : ""}`;
    const requests = `${this.modelRequests} model request${this.modelRequests === 1 ? "" : "s"}`;
    const u = this.usage;
    // input_tokens counts only what was read without the cache: the total is what the model read.
    const cached = [u.cacheRead > 0 ? `cache read ${count(u.cacheRead)}` : "", u.cacheWrite > 0 ? `cache write ${count(u.cacheWrite)}` : ""].filter((x) => x !== "");
    const input = u.input + u.cacheRead + u.cacheWrite;
    const tokens = `tokens in ${count(input)}${cached.length > 0 ? ` (${count(u.input)} + ${cached.join(" + ")})` : ""} · out ${count(u.output)}`;
    const priced = this.modelRequests - this.unpriced;
    const cost = priced === 0 || (this.costUsd === 0 && this.unpriced > 0) ? "" : ` · ≈ ${formatUsd(this.costUsd)}${this.unpriced > 0 ? ` (${this.unpriced} unpriced)` : ""}`;
    return `── ${reason} · ${tools} · ${requests} · ${tokens}${cost} · ${duration(wallMs)}`;
  }
}
