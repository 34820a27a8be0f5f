/**
 * The renderers on SDK-shaped events: streamed tokens are printed once (previews, then only what
 * the stored message adds), tool calls show their label, duration and shortened output, the
 * summary adds up usage, spinners appear on terminals only, and the one-line event format.
 */
import { describe, expect, it } from "vitest";
import type { StreamEvent } from "./client/follow.js";
import { captureOutput } from "./output.js";
import { idleCue } from "./commands/sessions.js";
import { formatEvent, wrap } from "./render/event-line.js";
import { LiveRenderer } from "./render/live.js";
import { style } from "./render/style.js";
import { abbreviate, toolLabel } from "./render/tools.js";

const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, 0, ms)).toISOString();
const ev = (e: Record<string, unknown>) => e as unknown as StreamEvent;
const text = (t: string) => [{ type: "text", text: t }];

function turn(): StreamEvent[] {
  return [
    ev({ type: "user.message", seq: 1, processed_at: at(0), content: text("fix it") }),
    ev({ type: "span.model_request_start", seq: 2, processed_at: at(10) }),
    ev({ type: "event_start", event: { id: "m1", type: "agent.message" } }),
    ev({ type: "event_delta", event_id: "m1", delta: { type: "content_delta", content: { type: "text", text: "Running " } } }),
    ev({ type: "event_delta", event_id: "m1", delta: { type: "content_delta", content: { type: "text", text: "the tests" } } }),
    ev({ type: "agent.message", id: "m1", seq: 3, processed_at: at(100), content: text("Running the tests.") }),
    ev({ type: "agent.tool_use", id: "t1", seq: 4, processed_at: at(100), name: "bash", input: { command: "bash test.sh" } }),
    ev({ type: "span.model_request_end", seq: 5, processed_at: at(100), model_usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 0 } }),
    ev({ type: "sandbox.provisioned", seq: 6, processed_at: at(150), sandbox_id: "sbx_1", driver: "bubblewrap", duration_ms: 40 }),
    ev({
      type: "agent.tool_result",
      seq: 7,
      processed_at: at(400),
      tool_use_id: "t1",
      is_error: true,
      content: text(Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join("\n")),
    }),
    ev({ type: "span.model_request_start", seq: 8, processed_at: at(410) }),
    ev({ type: "agent.message", id: "m2", seq: 9, processed_at: at(500), content: text("It fails.") }),
    ev({ type: "span.model_request_end", seq: 10, processed_at: at(500), model_usage: { input_tokens: 3, output_tokens: 2 } }),
    ev({ type: "session.status_idle", seq: 11, processed_at: at(510), stop_reason: { type: "end_turn" } }),
  ];
}

describe("LiveRenderer", () => {
  it("prints tokens once, tool calls with duration and shortened output, and ends on idle", () => {
    const out = captureOutput();
    const r = new LiveRenderer(out);
    const endings = turn().map((e) => r.handle(e));
    expect(endings.slice(0, -1).every((x) => x === undefined)).toBe(true);
    expect(endings.at(-1)).toBe("end_turn");
    const printed = out.stdout();
    expect(printed).toContain("› fix it");
    expect(printed.match(/Running the tests\./g)).toHaveLength(1);
    expect(printed).toContain("It fails.");
    expect(printed).toContain("▸ bash  bash test.sh");
    expect(printed).toContain("✗ bash  bash test.sh  300 ms");
    expect(printed).toContain("◆ sandbox sbx_1 ready (bubblewrap, 40 ms)");
    expect(printed).toContain("│ line 1\n");
    expect(printed).toContain("│ … 12 more lines");
    expect(printed).toContain("│ line 20\n");
    expect(printed).not.toMatch(/\x1b\[/);
    expect(r.tally.summary("end_turn", 1234, { bold: String, dim: String, red: String, green: String, yellow: String, cyan: String })).toBe(
      "── end_turn · 1 tool call (1 failed) · 2 model requests · tokens in 113 (13 + cache read 100) · out 7 · 1.2 s",
    );
  });

  it("adds up every input token and estimates the cost at each request's model price", () => {
    const plain = { bold: String, dim: String, red: String, green: String, yellow: String, cyan: String };
    const r = new LiveRenderer(captureOutput());
    r.handle(ev({ type: "span.model_request_start", seq: 1, model: "claude-sonnet-4-5" }));
    // A request that only wrote the cache: its input_tokens is 0, yet the model read 581 tokens.
    r.handle(ev({ type: "span.model_request_end", seq: 2, model_usage: { input_tokens: 0, output_tokens: 40, cache_read_input_tokens: 0, cache_creation_input_tokens: 581 } }));
    // 581 x $3.75 + 40 x $15 per million.
    expect(r.tally.summary("end_turn", 1000, plain)).toBe("── end_turn · 0 tool calls · 1 model request · tokens in 581 (0 + cache write 581) · out 40 · ≈ $0.0028 · 1.0 s");
    r.handle(ev({ type: "span.model_request_start", seq: 3, model: "a-model-without-a-price" }));
    r.handle(ev({ type: "span.model_request_end", seq: 4, model_usage: { input_tokens: 10, output_tokens: 1 } }));
    expect(r.tally.summary("end_turn", 1000, plain)).toContain("· ≈ $0.0028 (1 unpriced) ·");
    const unknown = new LiveRenderer(captureOutput());
    unknown.handle(ev({ type: "span.model_request_start", seq: 1, model: "a-model-without-a-price" }));
    unknown.handle(ev({ type: "span.model_request_end", seq: 2, model_usage: { input_tokens: 10, output_tokens: 1 } }));
    expect(unknown.tally.summary("end_turn", 1000, plain)).not.toContain("$");
  });

  it("draws a spinner on a terminal, and clears it before printing", () => {
    const out = captureOutput({ tty: true, color: true });
    const r = new LiveRenderer(out);
    for (const e of turn().slice(0, 7)) r.handle(e);
    r.finish();
    expect(out.stdout()).toContain("bash  bash test.sh");
    expect(out.stdout()).toContain("\r\x1b[2K");
  });

  it("maps every stop reason, and termination, to its ending", () => {
    for (const type of ["end_turn", "requires_action", "budget_reached", "retries_exhausted", "refusal", "interrupted"]) {
      const r = new LiveRenderer(captureOutput());
      expect(r.handle(ev({ type: "session.status_idle", stop_reason: { type, event_ids: ["x"] } }))).toBe(type);
    }
    expect(new LiveRenderer(captureOutput()).handle(ev({ type: "session.status_terminated" }))).toBe("terminated");
  });
});

describe("tool lines", () => {
  it("labels a call by what it does", () => {
    expect(toolLabel("edit", { path: "a/b.sh", old_string: "x", new_string: "y" }, 80)).toBe("edit  a/b.sh");
    expect(toolLabel("grep", { pattern: "max", path: "src" }, 80)).toBe("grep  max in src");
    expect(toolLabel("bash", { command: "x".repeat(200) }, 40)).toHaveLength(40);
  });

  it("keeps the head and the tail of long output", () => {
    expect(abbreviate("a\nb\n", 80)).toEqual(["a", "b"]);
    expect(abbreviate("", 80)).toEqual([]);
    const lines = abbreviate(Array.from({ length: 30 }, (_, i) => String(i)).join("\n"), 80, { head: 2, tail: 1 });
    expect(lines).toEqual(["0", "1", "… 27 more lines", "29"]);
  });
});

describe("formatEvent", () => {
  const when = "2026-01-01T14:03:07.412Z";

  it("prints seq, time, type and a summary", () => {
    const line = formatEvent(ev({ type: "agent.tool_use", seq: 12, processed_at: when, name: "bash", input: { command: "ls" } }));
    expect(line).toBe(`   12 14:03:07.412 ${"agent.tool_use".padEnd(24)} bash  ls`);
    expect(formatEvent(ev({ type: "session.status_idle", seq: 3, processed_at: when, stop_reason: { type: "end_turn" } }))).toContain("stop_reason=end_turn");
    expect(formatEvent(ev({ type: "session.usage", seq: 4, processed_at: when, usage: { list_cost: { amount: "1234", currency: "USD" } }, budget: { type: "limit", max_list_cost: { amount: "5000", currency: "USD" } } }))).toContain(
      "list cost $12.34 of a $50.00 budget",
    );
    expect(formatEvent(ev({ type: "session.updated", seq: 5, processed_at: when, budget: null, title: "t" }))).toContain("budget, title");
  });

  it("keeps every head line within the width, and wraps a message's text under it instead of cutting it", () => {
    const long = "The deploy failed at migration 0042 because the orders table does not exist yet; run migration 0041 first, then deploy again. ".repeat(3);
    const events = [
      ev({ type: "agent.tool_use", seq: 4, processed_at: when, name: "bash", input: { command: `cd /workspace/stats && ${"npm test -- --runInBand ".repeat(8)}` } }),
      ev({ type: "agent.tool_result", seq: 5, processed_at: when, is_error: true, content: text(`${"x".repeat(200)}\nsecond line\nthird`) }),
      ev({ type: "agent.message", seq: 6, processed_at: when, content: text(long) }),
      ev({ type: "session.error", seq: 7, processed_at: when, error: { type: "model_overloaded_error", message: "m".repeat(300), retry_status: { type: "retrying" } } }),
    ];
    for (const width of [80, 60, 120]) {
      const lines = events.flatMap((e) => formatEvent(e, width).split("\n"));
      for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(width);
      const message = lines.slice(lines.findIndex((l) => l.includes("agent.message")) + 1, -1).map((l) => l.trim()).join(" ");
      expect(message).toBe(long.trim());
    }
    expect(formatEvent(events[1]!, 80)).toMatch(/error: x+… \(\+2 lines\)$/);
  });

  it("colours by kind only when asked", () => {
    const result = ev({ type: "agent.tool_result", seq: 5, processed_at: when, is_error: true, content: text("boom") });
    expect(formatEvent(result, 80)).not.toMatch(/\x1b\[/);
    const coloured = formatEvent(result, 80, style(true));
    expect(coloured).toContain("\x1b[31magent.tool_result");
    // Colour codes take no columns: the text is the same once they are taken out.
    expect(coloured.replace(/\x1b\[\d+m/g, "")).toBe(formatEvent(result, 80));
  });
});

describe("wrap", () => {
  it("breaks between words, keeps paragraphs, and splits a word longer than the line", () => {
    expect(wrap("one two three four", 10)).toEqual(["one two", "three four"]);
    expect(wrap("a\n\nb", 10)).toEqual(["a", "", "b"]);
    expect(wrap(`${"y".repeat(25)} z`, 10)).toEqual(["y".repeat(10), "y".repeat(10), "yyyyy z"]);
  });
});

describe("idleCue", () => {
  it("says what the idle session waits for", () => {
    expect(idleCue(ev({ type: "session.status_idle", stop_reason: { type: "end_turn" } }))).toContain("idle, waiting for a message");
    expect(idleCue(ev({ type: "session.status_idle", stop_reason: { type: "requires_action", event_ids: ["a", "b"] } }))).toContain("waiting for the client (2 tool calls to answer)");
    expect(idleCue(undefined)).toContain("idle, waiting for a message");
  });
});
