/**
 * A gateway keeps each session's target fields in memory (sessions/target-cache.ts) rather than
 * reading the session's row on every events.send, list and stream: a change made through another
 * instance on the same database reaches it through the row's trigger (NOTIFY), and one made
 * through the instance itself at once. Without the trigger the other instance would accept
 * events for an archived session, and list a deleted one's, for as long as it kept its copy. A
 * change whose NOTIFY never arrives (a LISTEN connection gone without an error: a NAT's idle
 * timeout, a half-open socket) is still seen once the copy is MH_GATEWAY_TARGET_CACHE_MS old.
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
let agentId: string;
let environmentId: string;

beforeAll(async () => {
  stack = await startStack({ scenarios: [defineScenario("hello", [{ text: "Hello." }], { onExhausted: "repeat-last" })], vault: false });
  a = stack.client().sdk;
  const other = await stack.anotherGateway({});
  b = new Anthropic({ apiKey: KEY_A, baseURL: other.url, maxRetries: 0 });
  agentId = (await a.beta.agents.create({ name: "greeter", model: "claude-sonnet-5-5", system: "[scenario:hello] You greet." })).id;
  environmentId = (await a.beta.environments.create({ name: "env" })).id;
});
afterAll(async () => {
  await stack?.stop();
});

const say = (client: Anthropic, id: string): Promise<unknown> =>
  client.beta.sessions.events.send(id, { events: [{ type: "user.message", content: [{ type: "text", text: "hi" }] }] });

/** The status an SDK call failed with, or "ok". */
const outcome = (p: Promise<unknown>): Promise<number | "ok"> =>
  p.then(
    () => "ok" as const,
    (err: unknown) => {
      if (err instanceof Anthropic.APIError && err.status !== undefined) return Number(err.status);
      throw err;
    },
  );

describe("sessions' targets kept in memory", () => {
  it("an archive or a delete through another instance reaches this one", async () => {
    const archived = (await a.beta.sessions.create({ agent: agentId, environment_id: environmentId })).id;
    const deleted = (await a.beta.sessions.create({ agent: agentId, environment_id: environmentId })).id;
    // Both read (and kept) here.
    expect(await outcome(say(a, archived))).toBe("ok");
    expect(await outcome(a.beta.sessions.events.list(deleted))).toBe("ok");
    await b.beta.sessions.archive(archived);
    await b.beta.sessions.delete(deleted);
    await eventually(async () => ((await outcome(say(a, archived))) === 400 ? true : undefined), "the archive through the other instance to refuse events here", 15_000);
    await eventually(async () => ((await outcome(a.beta.sessions.events.list(deleted))) === 404 ? true : undefined), "the delete through the other instance to show here", 15_000);
  });

  it("an archive through this instance refuses the next send at once", async () => {
    const id = (await a.beta.sessions.create({ agent: agentId, environment_id: environmentId })).id;
    expect(await outcome(say(a, id))).toBe("ok");
    await a.beta.sessions.archive(id);
    expect(await outcome(say(a, id))).toBe(400);
  });
});

describe("a change no instance hears of", () => {
  it("is seen once the copy is MH_GATEWAY_TARGET_CACHE_MS old", async () => {
    const short = await stack.anotherGateway({ MH_GATEWAY_TARGET_CACHE_MS: "1000" });
    const c = new Anthropic({ apiKey: KEY_A, baseURL: short.url, maxRetries: 0 });
    const id = (await a.beta.sessions.create({ agent: agentId, environment_id: environmentId })).id;
    // Read (and kept) there.
    expect(await outcome(say(c, id))).toBe("ok");
    // Archived with the row's triggers off for this connection: its NOTIFY is never sent, as
    // when a LISTEN connection is gone and nothing says so.
    const admin = new pg.Client({ connectionString: stack.db.url });
    await admin.connect();
    try {
      await admin.query("SET session_replication_role = replica");
      const { rowCount } = await admin.query("UPDATE gw_sessions SET archived_at = now() WHERE session_id = $1", [id]);
      expect(rowCount).toBe(1);
    } finally {
      await admin.end();
    }
    await eventually(async () => ((await outcome(say(c, id))) === 400 ? true : undefined), "the unheard archive to refuse events once the copy is old", 15_000);
  });
});
