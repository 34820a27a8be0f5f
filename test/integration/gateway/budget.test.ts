/**
 * Session budgets through the official SDK on the whole stack: a budget only for a priced model,
 * the harness stopping the turn with budget_reached once the list cost reaches it (no model
 * request made, the session.usage it was checked against written before the idle), the cost on
 * the session's usage, a raise below the consumed cost refused, a raise above it resuming the
 * stopped turn, removal, no budget added later, and session.updated recording each change.
 * The test's model costs a cent a token (MH_MODEL_PRICES), so costs are token counts.
 */
import Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type CountingClient, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

const CENT_A_TOKEN = { input: 10_000, output: 10_000, cache_read: 10_000, cache_write_5m: 10_000, cache_write_1h: 10_000 };
const usd = (amount: string) => ({ type: "limit" as const, max_list_cost: { amount, currency: "USD" as const } });

let stack: Stack;
let a: CountingClient;
let metered: string;
let unpriced: string;
let environmentId: string;

beforeAll(async () => {
  stack = await startStack({
    scenarios: [defineScenario("budget", [{ text: "Spent a little." }], { onExhausted: "repeat-last" })],
    env: { MH_MODEL_PRICES: JSON.stringify({ "claude-metered": CENT_A_TOKEN }) },
    vault: false,
  });
  a = stack.client();
  metered = (await a.sdk.beta.agents.create({ name: "metered", model: "claude-metered", system: "[scenario:budget] You spend." })).id;
  unpriced = (await a.sdk.beta.agents.create({ name: "unpriced", model: "claude-unpriced-1", system: "[scenario:budget] You spend." })).id;
  environmentId = (await a.sdk.beta.environments.create({ name: "env" })).id;
});
afterAll(async () => {
  await stack?.stop();
});

async function events(id: string): Promise<Event[]> {
  const out: Event[] = [];
  for await (const e of a.sdk.beta.sessions.events.list(id, { limit: 100 })) out.push(e);
  return out;
}

/** The events once the session has gone idle `n` times. */
function idles(id: string, n: number): Promise<Event[]> {
  return eventually(async () => {
    const all = await events(id);
    return all.filter((e) => e.type === "session.status_idle").length >= n ? all : undefined;
  }, `${n} idles of ${id}`, 20_000);
}

function say(id: string, text: string): Promise<unknown> {
  return a.sdk.beta.sessions.events.send(id, { events: [{ type: "user.message", content: [{ type: "text", text }] }] });
}

/** What the model requests so far cost at a cent a token. */
function spent(all: readonly Event[]): number {
  let cents = 0;
  for (const e of all) {
    if (e.type !== "span.model_request_end") continue;
    const u = e.model_usage;
    cents += u.input_tokens + u.output_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
  }
  return cents;
}

async function refusal(call: Promise<unknown>): Promise<{ status: number | undefined; code: unknown }> {
  const err = await call.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof Anthropic.APIError)) throw new Error(`expected an APIError, got ${String(err)}`);
  const body = err.error as { error?: { details?: { error_code?: string } } } | undefined;
  const status = typeof err.status === "number" ? err.status : undefined;
  return { status, code: body?.error?.details?.error_code };
}

describe("session budgets", () => {
  it("are taken only for a model with a list price, and shown on the session", async () => {
    expect(await refusal(a.sdk.beta.sessions.create({ agent: unpriced, environment_id: environmentId, budget: usd("100") }))).toEqual({ status: 400, code: "model_not_budgetable" });
    expect(await refusal(a.sdk.beta.sessions.create({ agent: metered, environment_id: environmentId, budget: usd("01") }))).toMatchObject({ status: 400 });
    const session = await a.sdk.beta.sessions.create({ agent: metered, environment_id: environmentId, budget: usd("2500") });
    expect(session.budget).toEqual(usd("2500"));
    expect((await a.sdk.beta.sessions.retrieve(session.id)).budget).toEqual(usd("2500"));
    expect((await a.sdk.beta.sessions.create({ agent: unpriced, environment_id: environmentId })).budget).toBeNull();
  });

  it("stop the turn at the ceiling without a model request, and a raise resumes it", async () => {
    const { id } = await a.sdk.beta.sessions.create({ agent: metered, environment_id: environmentId, budget: usd("1") });
    await say(id, "first");
    const first = await idles(id, 1);
    // Under the ceiling when it started: the request was made, and its cost went past it.
    const cost = spent(first);
    expect(cost).toBeGreaterThan(1);
    const types = first.map((e) => e.type);
    expect(types.slice(-2)).toEqual(["session.usage", "session.status_idle"]);
    const snapshot = first.at(-2);
    expect(snapshot?.type === "session.usage" && snapshot.usage.list_cost).toEqual({ amount: String(cost), currency: "USD" });
    expect((await a.sdk.beta.sessions.retrieve(id)).usage.list_cost).toEqual({ amount: String(cost), currency: "USD" });

    await say(id, "second");
    const second = await idles(id, 2);
    const afterSecond = second.slice(second.findIndex((e) => e.type === "user.message" && e.content[0]?.type === "text" && e.content[0].text === "second"));
    expect(afterSecond.map((e) => e.type)).toEqual(["user.message", "session.usage", "session.status_idle"]);
    const [, usage, idle] = afterSecond;
    expect(idle?.type === "session.status_idle" && idle.stop_reason).toEqual({ type: "budget_reached" });
    expect(usage?.type === "session.usage" && [usage.usage.list_cost, usage.budget]).toEqual([{ amount: String(cost), currency: "USD" }, usd("1")]);

    // Not above what was consumed: refused, nothing recorded.
    expect(await refusal(a.sdk.beta.sessions.update(id, { budget: usd(String(cost)) }))).toEqual({ status: 400, code: "budget_not_raised" });
    expect((await events(id)).length).toBe(second.length);

    const raised = usd(String(cost + 1_000_000));
    expect((await a.sdk.beta.sessions.update(id, { budget: raised })).budget).toEqual(raised);
    const resumed = await idles(id, 3);
    const tail = resumed.slice(second.length);
    expect(tail[0]).toMatchObject({ type: "session.updated", budget: raised });
    expect(tail[0]).not.toHaveProperty("title");
    expect(tail.map((e) => e.type)).toContain("span.model_request_start");
    expect(tail.some((e) => e.type === "agent.message")).toBe(true);
    const last = tail.at(-1);
    expect(last?.type === "session.status_idle" && last.stop_reason).toEqual({ type: "end_turn" });
    const resumedCost = spent(resumed);
    expect((await a.sdk.beta.sessions.retrieve(id)).usage.list_cost).toEqual({ amount: String(resumedCost), currency: "USD" });
  });

  it("can be removed, never added later, and every change is a session.updated", async () => {
    const capped = await a.sdk.beta.sessions.create({ agent: metered, environment_id: environmentId, budget: usd("500"), title: "t" });
    const removed = await a.sdk.beta.sessions.update(capped.id, { budget: null, title: "renamed", metadata: { k: "v" } });
    expect([removed.budget, removed.title]).toEqual([null, "renamed"]);
    const updated = (await events(capped.id)).filter((e) => e.type === "session.updated");
    expect(updated).toHaveLength(1);
    expect(updated[0]).toMatchObject({ budget: null, title: "renamed", metadata: { k: "v" } });
    expect(updated[0]).not.toHaveProperty("agent");
    expect(await refusal(a.sdk.beta.sessions.update(capped.id, { budget: usd("900") }))).toEqual({ status: 400, code: "budget_create_only" });

    const uncapped = await a.sdk.beta.sessions.create({ agent: metered, environment_id: environmentId });
    expect(await refusal(a.sdk.beta.sessions.update(uncapped.id, { budget: usd("900") }))).toEqual({ status: 400, code: "budget_create_only" });
    // Nothing changed, nothing recorded.
    await a.sdk.beta.sessions.update(uncapped.id, { budget: null, title: null });
    expect((await events(uncapped.id)).filter((e) => e.type === "session.updated")).toEqual([]);
    await say(uncapped.id, "free");
    const done = await idles(uncapped.id, 1);
    expect(done.at(-1)?.type === "session.status_idle" && done.at(-1)).toMatchObject({ stop_reason: { type: "end_turn" } });
    // An uncapped session's usage is still priced.
    const snapshot = done.at(-2);
    expect(snapshot?.type === "session.usage" && [snapshot.usage.list_cost, snapshot.budget]).toEqual([{ amount: String(spent(done)), currency: "USD" }, null]);
  });
});
