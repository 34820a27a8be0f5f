/**
 * nextStep: what the log says must happen next, for each shape of history the harness can find
 * when it wakes (including after a crash at any moment), and the model's view of a turn.
 */
import { describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { EvaluatedPermission, StopReasonType, ToolConfirmationResult, type Event } from "@metaharness/proto";
import { awaitsInput, neverRan, nextStep } from "./state.js";
import { NO_LIMITS } from "./budget.js";
import { modelOrder, orderedMessages, toMessages } from "./context/messages.js";

const text = (t: string) => [{ block: { $case: "text" as const, value: { text: t } } }];
let seq = 0;
const at = (e: Event): Event => ({ ...e, seq: ++seq });
const user = (t: string) => at(newEvent("user.message", { content: text(t) }));
const start = () => at(newEvent("span.model_request_start", { model: "m" }));
const end = (s: Event) =>
  at(newEvent("span.model_request_end", { modelRequestStartId: s.id, isError: false, modelUsage: { inputTokens: 5, outputTokens: 5, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 }, stopReason: "end_turn" }));
const said = (t: string) => at(newEvent("agent.message", { content: text(t) }));
const running = () => at(newEvent("session.status_running", {}));
const idle = (type = StopReasonType.STOP_REASON_TYPE_END_TURN) => at(newEvent("session.status_idle", { stopReason: { type, eventIds: [] } }));
const bash = (permission = EvaluatedPermission.EVALUATED_PERMISSION_ALLOW) =>
  at(newEvent("agent.tool_use", { name: "bash", input: { command: "ls" }, evaluatedPermission: permission, sandboxId: "" }));
const result = (use: Event) => at(newEvent("agent.tool_result", { toolUseId: use.id, content: text("ok"), isError: false }));

describe("nextStep", () => {
  it("calls the model for new input, and not again once it answered", () => {
    const u = user("hi");
    expect(nextStep([u], NO_LIMITS).kind).toBe("call-model");
    const s = start();
    expect(nextStep([u, running(), s, said("hello"), end(s)], NO_LIMITS).kind).toBe("done");
  });

  it("finds nothing to mark idle in a log that never ran and holds no input (a Wake ahead of the first input)", () => {
    expect(nextStep([], NO_LIMITS).kind).toBe("done");
    expect(neverRan([])).toBe(true);
    expect(neverRan([at(newEvent("system.message", { content: text("later") }))])).toBe(true);
    expect(neverRan([user("hi")])).toBe(false);
    expect(neverRan([at(newEvent("user.interrupt", {}))])).toBe(false);
    expect(neverRan([user("hi"), idle()])).toBe(false);
  });

  it("re-asks after a crash mid-stream (a start without its end answers nothing)", () => {
    expect(nextStep([user("hi"), running(), start()], NO_LIMITS).kind).toBe("call-model");
  });

  it("runs tool calls without results, then asks the model again", () => {
    const s = start();
    const use = bash();
    const history = [user("hi"), running(), s, use, end(s)];
    const step = nextStep(history, NO_LIMITS);
    expect(step.kind === "run-tools" && step.tools.map((t) => t.event.id)).toEqual([use.id]);
    expect(nextStep([...history, result(use)], NO_LIMITS).kind).toBe("call-model");
  });

  it("waits for a confirmation, then runs or denies", () => {
    const s = start();
    const use = bash(EvaluatedPermission.EVALUATED_PERMISSION_ASK);
    const history = [user("hi"), running(), s, use, end(s)];
    const waiting = nextStep(history, NO_LIMITS);
    expect(waiting).toEqual({ kind: "wait", eventIds: [use.id] });
    const deny = at(newEvent("user.tool_confirmation", { toolUseId: use.id, result: ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_DENY, denyMessage: "no" }));
    const step = nextStep([...history, idle(StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION), deny], NO_LIMITS);
    expect(step.kind === "run-tools" && step.tools[0]?.confirmation).toBe("deny");
  });

  it("treats input sent while a request streamed as unanswered", () => {
    const s = start();
    expect(nextStep([user("a"), running(), s, user("b"), said("x"), end(s)], NO_LIMITS).kind).toBe("call-model");
  });

  it("acts on an interrupt of a running turn, ignores one while idle", () => {
    const s = start();
    const use = bash();
    const step = nextStep([user("hi"), running(), s, use, end(s), at(newEvent("user.interrupt", {}))], NO_LIMITS);
    expect(step.kind === "interrupt" && step.unanswered.map((t) => t.event.id)).toEqual([use.id]);
    const s2 = start();
    expect(nextStep([user("hi"), running(), s2, said("x"), end(s2), idle(), at(newEvent("user.interrupt", {}))], NO_LIMITS).kind).toBe("done");
  });

  it("in a self-hosted environment, awaits the worker's result for its tools, and still records a denial", () => {
    const worker = new Set(["bash"]);
    const s = start();
    const use = bash();
    const history = [user("hi"), running(), s, use, end(s)];
    const step = nextStep(history, NO_LIMITS, worker);
    expect(step.kind === "await-hands" && step.tools.map((t) => [t.event.id, t.readyAt])).toEqual([[use.id, use.createdAt]]);
    const answered = at(newEvent("user.tool_result", { toolUseId: use.id, content: text("ok"), isError: false }));
    expect(nextStep([...history, answered], NO_LIMITS, worker).kind).toBe("call-model");

    const asked = bash(EvaluatedPermission.EVALUATED_PERMISSION_ASK);
    const gated = [user("hi"), running(), s, asked, end(s)];
    expect(nextStep(gated, NO_LIMITS, worker)).toEqual({ kind: "wait", eventIds: [asked.id] });
    const allow = at({ ...newEvent("user.tool_confirmation", { toolUseId: asked.id, result: ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_ALLOW, denyMessage: "" }), createdAt: new Date(5) });
    const allowed = nextStep([...gated, allow], NO_LIMITS, worker);
    expect(allowed.kind === "await-hands" && allowed.tools[0]?.readyAt).toEqual(new Date(5));
    const deny = at(newEvent("user.tool_confirmation", { toolUseId: asked.id, result: ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_DENY, denyMessage: "" }));
    expect(nextStep([...gated, deny], NO_LIMITS, worker).kind).toBe("run-tools");
    // A tool the worker does not run (the windowed strategy's own) stays the harness's.
    expect(nextStep(history, NO_LIMITS, new Set(["read"])).kind).toBe("run-tools");
  });

  it("stops at the token budget", () => {
    const s = start();
    expect(nextStep([user("a"), running(), s, said("x"), end(s), idle(), user("b")], { tokens: 10 }).kind).toBe("budget");
    expect(nextStep([user("a"), running(), s, said("x"), end(s), idle(), user("b")], NO_LIMITS).kind).toBe("call-model");
  });

  it("stops at the spend budget, and a budget raised after that stop reopens the turn", () => {
    // 10 tokens at 1,000 dollars per million: 1 cent.
    const price = { input: 1000, output: 1000, cacheRead: 1000, cacheWrite5m: 1000, cacheWrite1h: 1000 };
    const cents = (amount: string) => ({ maxListCost: { amount, currency: "USD" } });
    const limits = { tokens: 0, price, budget: cents("1") };
    const budget = (amount: string | undefined) => at(newEvent("session.updated", { budget: { limit: amount === undefined ? undefined : cents(amount) }, title: undefined, metadata: {}, agent: undefined }));
    const s = start();
    const turn = [user("a"), running(), s, said("x"), end(s), idle()];
    expect(nextStep([user("a")], limits).kind).toBe("call-model");
    const stopped = [...turn, user("b")];
    expect(nextStep(stopped, limits).kind).toBe("budget");
    expect(nextStep(stopped, { ...limits, budget: cents("2") }).kind).toBe("call-model");
    expect(nextStep(stopped, { ...limits, price: undefined }).kind).toBe("budget");
    const reached = [...stopped, idle(StopReasonType.STOP_REASON_TYPE_BUDGET_REACHED)];
    expect(nextStep(reached, limits).kind).toBe("done");
    expect(nextStep([...reached, budget("2")], limits).kind).toBe("call-model");
    expect(nextStep([...reached, budget(undefined)], limits).kind).toBe("call-model");
    // Raised after a turn that ended otherwise: nothing to resume.
    expect(nextStep([...turn, budget("2")], limits).kind).toBe("done");
    // A loop woken beside input still landing waits for it only where nothing else is to do.
    expect(awaitsInput(reached)).toBe(true);
    expect(awaitsInput([...reached, budget("2")])).toBe(false);
    expect(awaitsInput([...turn, budget("2")])).toBe(true);
  });
});

describe("the model's view", () => {
  it("sends a system.message as marked user-side text at its place", () => {
    const s = start();
    const system = at(newEvent("system.message", { content: text("Answer in French.") }));
    const events = [user("hi"), s, said("hello"), end(s), system, user("again")];
    expect(toMessages(events)).toEqual([
      { role: "user", content: [{ type: "text", text: "hi" }] },
      { role: "assistant", content: [{ type: "text", text: "hello" }] },
      { role: "user", content: [{ type: "text", text: "<system-message>\nAnswer in French.\n</system-message>" }, { type: "text", text: "again" }] },
    ]);
    expect(nextStep([...events.slice(0, 4), idle(), system], NO_LIMITS).kind).toBe("done");
  });

  it("puts input that arrived during a request after that request's answer", () => {
    const s = start();
    const events = [user("first"), s, user("second"), said("answer"), end(s)];
    expect(modelOrder(events).map((e) => e.type)).toEqual(["user.message", "span.model_request_start", "agent.message", "span.model_request_end", "user.message"]);
    expect(toMessages(events).map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  });

  it("orders a history once: its model order, or any suffix of it, is in model order already (orderedMessages relies on it)", () => {
    const [s1, s2, crashed] = [start(), start(), start()];
    const u = bash();
    const events = [user("first"), s1, user("during 1"), said("one"), u, end(s1), result(u), s2, user("during 2"), crashed, said("two"), end(s2), user("after")];
    const ordered = modelOrder(events);
    expect(ordered.map((e) => e.seq)).not.toEqual(events.map((e) => e.seq));
    for (let from = 0; from < ordered.length; from++) {
      const suffix = ordered.slice(from);
      expect(modelOrder(suffix)).toEqual(suffix);
      expect(orderedMessages(suffix)).toEqual(toMessages(suffix));
    }
  });

  it("sends every block of a tool result, with citations on all search results or on none", () => {
    const search = (title: string, citationsEnabled: boolean) => ({
      block: { $case: "searchResult" as const, value: { source: `kb://${title}`, title, content: [{ text: title }], citationsEnabled } },
    });
    const image = { block: { $case: "image" as const, value: { source: { type: "base64", mediaType: "image/png", data: "iVBORw0KGgo=", url: "", fileId: "" } } } };
    const use1 = bash();
    const use2 = bash();
    const r1 = at(newEvent("agent.tool_result", { toolUseId: use1.id, content: [...text("one"), search("cited", true), image], isError: false }));
    const r2 = at(newEvent("agent.tool_result", { toolUseId: use2.id, content: [search("plain", false)], isError: false }));
    const messages = toMessages([user("go"), use1, r1, use2, r2]);
    const results = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === "tool_result");
    const inner = results.flatMap((r) => (Array.isArray(r.content) ? r.content : []));
    expect(inner.map((b) => b.type)).toEqual(["text", "search_result", "image", "search_result"]);
    // One search result may not be cited: then none is (the API refuses a mix).
    expect(inner.flatMap((b) => (b.type === "search_result" ? [b.citations?.enabled] : []))).toEqual([false, false]);
    const allCited = toMessages([user("go"), use1, r1]).flatMap((m) => (Array.isArray(m.content) ? m.content : []));
    const cited = allCited.flatMap((b) => (b.type === "tool_result" && Array.isArray(b.content) ? b.content : [])).filter((b) => b.type === "search_result");
    expect(cited.map((b) => b.citations?.enabled)).toEqual([true]);
  });
});
