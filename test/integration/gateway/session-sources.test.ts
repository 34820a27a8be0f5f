/**
 * A gateway keeps the agents and environments sessions.create reads (sessions/sources.ts) in
 * memory rather than reading them for every session: a change made through another instance on
 * the same database reaches it through the tables' triggers (NOTIFY, migration 008), and one made
 * through the instance itself at once. Without the triggers the other instance would create
 * sessions from an agent's old version, or in an archived environment, for as long as it kept its
 * copy. A change whose NOTIFY never arrives is still seen once the copy is
 * MH_GATEWAY_TARGET_CACHE_MS old; sources too large to keep are read every time.
 */
import Anthropic from "@anthropic-ai/sdk";
import pg from "pg";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, KEY_A, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

let stack: Stack;
let a: Anthropic;
let b: Anthropic;

beforeAll(async () => {
  stack = await startStack({ scenarios: [defineScenario("hello", [{ text: "Hello." }], { onExhausted: "repeat-last" })], vault: false });
  a = stack.client().sdk;
  const other = await stack.anotherGateway({});
  b = new Anthropic({ apiKey: KEY_A, baseURL: other.url, maxRetries: 0 });
});
afterAll(async () => {
  await stack?.stop();
});

const newAgent = async (client: Anthropic): Promise<string> =>
  (await client.beta.agents.create({ name: "greeter", model: "claude-sonnet-5-5", system: "[scenario:hello] You greet." })).id;
const newEnvironment = async (client: Anthropic): Promise<string> => (await client.beta.environments.create({ name: "env" })).id;

/** The agent version a session made through `client` runs, or the status its create failed with. */
const created = (client: Anthropic, agent: string, environmentId: string): Promise<number | string> =>
  client.beta.sessions.create({ agent, environment_id: environmentId }).then(
    (s) => `v${s.agent.version}`,
    (err: unknown) => {
      if (err instanceof Anthropic.APIError && err.status !== undefined) return Number(err.status);
      throw err;
    },
  );

const newSystem = (client: Anthropic, agent: string, version: number): Promise<unknown> =>
  client.beta.agents.update(agent, { version, system: `[scenario:hello] You greet, version ${version + 1}.` });

/** Runs `sql` on the gateway's database with triggers off for its connection: no NOTIFY is sent. */
async function unheard(sql: string, params: unknown[]): Promise<number | null> {
  const admin = new pg.Client({ connectionString: stack.db.url });
  await admin.connect();
  try {
    await admin.query("SET session_replication_role = replica");
    return (await admin.query(sql, params)).rowCount;
  } finally {
    await admin.end();
  }
}

/** Gives `agent` a version 2 (a copy of its first) that no instance hears of. */
const unheardSecondVersion = (agent: string): Promise<number | null> =>
  unheard(
    `WITH v AS (INSERT INTO gw_agent_versions (agent_id, version, body, created_at)
       SELECT agent_id, 2, body, now() FROM gw_agent_versions WHERE agent_id = $1 AND version = 1 RETURNING agent_id)
     UPDATE gw_agents SET version = 2 WHERE agent_id = (SELECT agent_id FROM v)`,
    [agent],
  );

describe("sessions' sources kept in memory", () => {
  it("an agent's new version, an agent's archive and an environment's archive through another instance reach this one", async () => {
    const agent = await newAgent(a);
    const archivedAgent = await newAgent(a);
    const env = await newEnvironment(a);
    const archivedEnv = await newEnvironment(a);
    // Read (and kept) here.
    expect(await created(a, agent, env)).toBe("v1");
    expect(await created(a, archivedAgent, env)).toBe("v1");
    expect(await created(a, agent, archivedEnv)).toBe("v1");
    await newSystem(b, agent, 1);
    await b.beta.agents.archive(archivedAgent);
    await b.beta.environments.archive(archivedEnv);
    await eventually(async () => ((await created(a, agent, env)) === "v2" ? true : undefined), "the new version made through the other instance to be used here", 15_000);
    await eventually(async () => ((await created(a, archivedAgent, env)) === 400 ? true : undefined), "the agent archived through the other instance to be refused here", 15_000);
    await eventually(async () => ((await created(a, agent, archivedEnv)) === 400 ? true : undefined), "the environment archived through the other instance to be refused here", 15_000);
  });

  it("a change through this instance is used by its next sessions.create at once", async () => {
    const agent = await newAgent(a);
    const env = await newEnvironment(a);
    expect(await created(a, agent, env)).toBe("v1");
    await newSystem(a, agent, 1);
    expect(await created(a, agent, env)).toBe("v2");
    await a.beta.environments.delete(env);
    expect(await created(a, agent, env)).toBe(404);
  });

  it("a version named explicitly is kept apart from the current one", async () => {
    const agent = await newAgent(a);
    const env = await newEnvironment(a);
    await newSystem(a, agent, 1);
    expect(await created(a, agent, env)).toBe("v2");
    const pinned = await a.beta.sessions.create({ agent: { type: "agent", id: agent, version: 1 }, environment_id: env });
    expect(pinned.agent.version).toBe(1);
    expect(await created(a, agent, env)).toBe("v2");
  });
});

describe("a change no instance hears of", () => {
  it("is not seen while the copy is young, and is once it is MH_GATEWAY_TARGET_CACHE_MS old", async () => {
    const short = await stack.anotherGateway({ MH_GATEWAY_TARGET_CACHE_MS: "1500" });
    const c = new Anthropic({ apiKey: KEY_A, baseURL: short.url, maxRetries: 0 });
    const agent = await newAgent(a);
    const env = await newEnvironment(a);
    // Read (and kept) by both: `a` keeps it 30 s, `c` 1.5 s.
    expect(await created(a, agent, env)).toBe("v1");
    expect(await created(c, agent, env)).toBe("v1");
    // A second version with the triggers off for this connection: its NOTIFY is never sent, as
    // when a LISTEN connection is gone and nothing says so.
    expect(await unheardSecondVersion(agent)).toBe(1);
    // Kept: the instance that keeps its copy 30 s reads nothing and creates from version 1.
    expect(await created(a, agent, env)).toBe("v1");
    await eventually(async () => ((await created(c, agent, env)) === "v2" ? true : undefined), "the unheard version to be used once the copy is old", 15_000);
  });

  it("is seen at once for an agent too large to keep, which is read every time", async () => {
    const agent = (await a.beta.agents.create({ name: "verbose", model: "claude-sonnet-5-5", system: `[scenario:hello] ${"You greet. ".repeat(7_000)}` })).id;
    const env = await newEnvironment(a);
    expect(await created(a, agent, env)).toBe("v1");
    expect(await unheardSecondVersion(agent)).toBe(1);
    expect(await created(a, agent, env)).toBe("v2");
  });
});
