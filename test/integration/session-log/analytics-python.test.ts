/**
 * Analytics from Kafka outside TypeScript: sessions of two tenants run on the whole stack (a bash
 * call that works and one that fails in each, through a real sandbox broker), the outbox publishes
 * them with their tenant (mh-tenant), one of their records comes again (a redelivery), and then the
 * Python consumer (examples/analytics-python/consumer.py: classes generated from proto/ by
 * grpcio-tools' protoc at its start, a confluent-kafka consumer group over SASL/SCRAM with TLS) and
 * the TypeScript example (apps/session-log/src/examples/usage-consumer.ts) read the topic from the
 * start. Both must print the same per-tenant token usage and tool error rates, and those must be
 * what the sessions did.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createKafkaBus } from "@metaharness/event-bus";
import { Event, StopReasonType } from "@metaharness/proto";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idleReason } from "../../support/harness.js";
import { KEY_A, KEY_B, startStack, type Stack } from "../../support/gateway.js";
import { readTopic } from "../../support/kafka.js";
import { saslSettings, secureListeners } from "../../support/kafka-secure.js";
import { pythonTools } from "../../support/python-tools.js";
import { eventually } from "../../support/eventually.js";
import { KAFKA_BROKERS } from "../../support/topics.js";

const ROOT = new URL("../../../", import.meta.url).pathname;
const scenarios = [
  defineScenario("analytics", [
    { text: "Two commands.", toolUses: [{ name: "bash", input: { command: "ls /" } }, { name: "bash", input: { command: "exit 3" } }] },
    () => ({ text: "Done." }),
  ]),
];

type Line = Record<string, unknown>;
interface Consumer {
  readonly lines: Line[];
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  readonly stderr: () => string;
}

/** Starts a consumer process and collects its JSON lines. */
function consume(command: string, args: string[], env: Record<string, string>): Consumer {
  const child = spawn(command, args, { env: { PATH: process.env["PATH"] ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const lines: Line[] = [];
  let buffered = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    buffered += chunk;
    const parts = buffered.split("\n");
    buffered = parts.pop() ?? "";
    for (const p of parts) lines.push(JSON.parse(p) as Line);
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => void (stderr += chunk));
  return { lines, child, exited: new Promise((resolve) => child.on("exit", resolve)), stderr: () => stderr };
}

/** A consumer's last figures for each tenant. */
function tenants(c: Consumer): Record<string, Line> {
  const out: Record<string, Line> = {};
  for (const l of c.lines) {
    const t = l["tenant_usage"] as Line | undefined;
    if (t !== undefined) out[String(t["tenant"])] = t;
  }
  return out;
}

let stack: Stack;
let protoOut: string;
let topic: string;
const sessions: Record<string, string[]> = { "tenant-a": [], "tenant-b": [] };

beforeAll(async () => {
  protoOut = await mkdtemp(join(tmpdir(), "mh-proto-py-"));
  stack = await startStack({ scenarios, broker: true, logEnv: { MH_RELAY_ENABLED: "true" } });
  topic = stack.brain.log.topic;
  const run = async (key: string, tenant: string): Promise<void> => {
    const sdk = stack.client(key).sdk;
    const env = await sdk.beta.environments.create({ name: `analytics-${tenant}` });
    const agent = await sdk.beta.agents.create({ name: "a", model: "claude-sonnet-5-5", system: "[scenario:analytics]", tools: [{ type: "agent_toolset_20260401" }] });
    const id = (await sdk.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
    sessions[tenant]!.push(id);
    await sdk.beta.sessions.events.send(id, { events: [{ type: "user.message", content: [{ type: "text", text: "run both" }] }] });
    await stack.brain.waitFor(id, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN, 90_000);
    // Deleting a session terminates it: its last event, after which its figures are final.
    await sdk.beta.sessions.delete(id);
  };
  await Promise.all([run(KEY_A, "tenant-a"), run(KEY_A, "tenant-a"), run(KEY_B, "tenant-b")]);

  // Once the outbox published every session's end, a model request's record once more, as a
  // retrying relay sends it: neither consumer may count it twice.
  const reader = await readTopic(topic);
  try {
    const ended = (r: { event: Event }[]): number => r.filter((x) => x.event.type === "session.status_terminated").length;
    await reader.waitFor((r) => ended(r) === 3, 60_000);
    const again = reader.received.find((x) => x.key === sessions["tenant-a"]![0] && x.event.type === "span.model_request_end")!;
    expect(again.headers["mh-tenant"]).toBe("tenant-a");
    const bus = createKafkaBus({ brokers: KAFKA_BROKERS.split(","), clientId: "test-redeliver" });
    try {
      await (await bus.publisher()).publish([{ topic, key: again.key, value: Event.encode(again.event).finish(), headers: again.headers }]);
    } finally {
      await bus.close();
    }
  } finally {
    await reader.close();
  }
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  if (protoOut !== undefined) await rm(protoOut, { recursive: true, force: true });
});

describe("the Python analytics consumer", () => {
  it("computes each tenant's token usage and tool error rates exactly as the TypeScript example does", async () => {
    const python = await pythonTools();
    // Both over SASL/SCRAM with TLS, as against a managed Kafka, each in a group of its own.
    const kafka = { ...saslSettings(secureListeners(), "scram-sha-512"), MH_KAFKA_TOPIC: topic, MH_LOG_LEVEL: "warn" };
    const py = consume(python, [join(ROOT, "examples/analytics-python/consumer.py")], { ...kafka, MH_USAGE_GROUP: `py-${randomBytes(4).toString("hex")}`, MH_PROTO_OUT: protoOut });
    const ts = consume(process.execPath, [join(ROOT, "apps/session-log/dist/examples/usage-consumer.js")], { ...kafka, MH_USAGE_GROUP: `ts-${randomBytes(4).toString("hex")}` });
    try {
      const done = (c: Consumer): boolean => tenants(c)["tenant-a"]?.["sessions_terminated"] === 2 && tenants(c)["tenant-b"]?.["sessions_terminated"] === 1;
      await eventually(() => Promise.resolve(done(py) && done(ts) ? true : undefined), "both consumers' figures for every session", 120_000).catch((err: unknown) => {
        throw new Error(`${String(err)}\npython: ${JSON.stringify(tenants(py))}\n${py.stderr()}\ntypescript: ${JSON.stringify(tenants(ts))}\n${ts.stderr()}`);
      });
    } finally {
      py.child.kill("SIGTERM");
      ts.child.kill("SIGTERM");
    }
    expect(await py.exited).toBe(0);
    expect(await ts.exited).toBe(0);

    expect(tenants(py)).toEqual(tenants(ts));
    const a = tenants(py)["tenant-a"]!;
    const b = tenants(py)["tenant-b"]!;
    // Each session: two model requests, `ls /` that worked and `exit 3` that failed.
    expect(a).toMatchObject({ sessions: 2, sessions_terminated: 2, model_requests: 4, tools: { bash: { calls: 4, results: 4, errors: 2, error_rate: 0.5 } } });
    expect(b).toMatchObject({ sessions: 1, sessions_terminated: 1, model_requests: 2, tools: { bash: { calls: 2, results: 2, errors: 1, error_rate: 0.5 } } });
    // Tokens as the offline model counted them: the redelivered request is not in them twice.
    // (the offline model caches prompts as the API does: most input is cache reads).
    const input = (t: Line): number => Number(t["input_tokens"]) + Number(t["cache_creation_input_tokens"]) + Number(t["cache_read_input_tokens"]);
    expect(input(a)).toBeGreaterThan(input(b));
    expect(Number(b["output_tokens"])).toBeGreaterThan(0);
    expect(Number(a["output_tokens"])).toBe(2 * Number(b["output_tokens"]));
    expect(Object.keys(tenants(py)).sort()).toEqual(["tenant-a", "tenant-b"]);
    expect(py.lines.filter((l) => "gap" in l)).toEqual([]);
  }, 240_000);
});
