/**
 * Input the gateway must refuse, or take as the SDK's types define it, found by an audit against
 * the SDK: a JSON body is taken as typed (a number or null where a string belongs is a 400 naming
 * the field, where it used to be stored as text); a refused session update changes nothing the
 * harness runs; a session's threads page as every other list; `budget: null` on a session without a budget changes nothing.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, startStack, type CountingClient, type Stack } from "../../support/gateway.js";

let stack: Stack;
let a: CountingClient;
let agentId: string;
let environmentId: string;

beforeAll(async () => {
  stack = await startStack({ scenarios: [], vault: false });
  a = stack.client();
  agentId = (await a.sdk.beta.agents.create({ name: "strict", model: "claude-sonnet-5-5", tools: [{ type: "agent_toolset_20260401" }] })).id;
  environmentId = (await a.sdk.beta.environments.create({ name: "strict" })).id;
});
afterAll(async () => {
  await stack?.stop();
});

const apiMessage = (err: unknown): string => (err instanceof Anthropic.APIError ? (err as InstanceType<typeof Anthropic.APIError>).apiMessage ?? "" : String(err));

/** POST `path` with `body` as JSON, as a client other than the SDK may send it. */
async function post(path: string, body: unknown): Promise<{ status: number; message: string }> {
  const res = await fetch(`${stack.gateway.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": KEY_A, "anthropic-version": "2023-06-01" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { error?: { message?: string } };
  return { status: res.status, message: json.error?.message ?? "" };
}

describe("bodies", () => {
  it("are taken as typed: a number, list, boolean or null where a string belongs is refused, naming the field", async () => {
    const cases: Array<[string, unknown, string]> = [
      ["/v1/agents", { name: 123, model: "claude-sonnet-5-5" }, "name"],
      ["/v1/agents", { name: ["x"], model: "claude-sonnet-5-5" }, "name"],
      ["/v1/agents", { name: "x", model: "claude-sonnet-5-5", metadata: { k: null } }, "metadata.k"],
      ["/v1/agents", { name: "x", model: "claude-sonnet-5-5", metadata: { k: 5 } }, "metadata.k"],
      ["/v1/environments", { name: true }, "name"],
      ["/v1/sessions", { agent: agentId, environment_id: environmentId, title: 42 }, "title"],
      ["/v1/sessions", { agent: agentId, environment_id: environmentId, vault_ids: "vlt_abc" }, "vault_ids"],
      ["/v1/vaults", { display_name: "v", metadata: { k: null } }, "metadata.k"],
    ];
    const agentsBefore = (await a.sdk.beta.agents.list()).data.length;
    for (const [path, body, field] of cases) {
      const { status, message } = await post(path, body);
      expect([path, status], JSON.stringify(body)).toEqual([path, 400]);
      expect(message, JSON.stringify(body)).toMatch(new RegExp(`^${field.replace(".", "\\.")}\\b`));
    }
    expect((await a.sdk.beta.agents.list()).data.length).toBe(agentsBefore);
    // Query strings are text, and their numbers are still read from it.
    expect((await fetch(`${stack.gateway.url}/v1/agents?limit=1`, { headers: { "x-api-key": KEY_A } })).status).toBe(200);
  });
});

describe("a session update", () => {
  it("that is refused changes nothing the harness runs", async () => {
    const session = await a.sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
    const err = await a.sdk.beta.sessions.update(session.id, { agent: { tools: [] }, metadata: tooMany }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(apiMessage(err)).toContain("metadata");
    expect((await a.sdk.beta.sessions.retrieve(session.id)).agent.tools).toMatchObject([{ type: "agent_toolset_20260401" }]);
    // What the harness reads at each turn: the log's copy of the agent (it had no tools left).
    const { session: logged } = await stack.brain.log.client.getSession({ sessionId: session.id });
    expect(logged?.metadata?.agent?.tools.map((t) => t.name)).toContain("bash");
  });

  it("with budget null on a session without one changes the rest", async () => {
    const session = await a.sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    const updated = await a.sdk.beta.sessions.update(session.id, { budget: null, title: "no budget" });
    expect(updated).toMatchObject({ title: "no budget", budget: null });
  });
});

describe("a session's threads", () => {
  it("page as every list: a null page is the first, a cursor of no list or a limit out of range is a 400", async () => {
    const session = await a.sdk.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    expect((await a.sdk.beta.sessions.threads.list(session.id, { page: null })).data).toHaveLength(1);
    expect((await a.sdk.beta.sessions.threads.list(session.id, { limit: 1 })).data).toHaveLength(1);
    for (const [query, field] of [[{ page: "garbage" }, "page"], [{ limit: 0 }, "limit"], [{ limit: 101 }, "limit"]] as const) {
      const err = await a.sdk.beta.sessions.threads.list(session.id, query).catch((e: unknown) => e);
      expect(err, JSON.stringify(query)).toBeInstanceOf(Anthropic.BadRequestError);
      expect(apiMessage(err)).toMatch(new RegExp(`^${field}\\b`));
    }
  });
});
