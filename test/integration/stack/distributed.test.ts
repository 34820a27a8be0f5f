/**
 * The distributed deployment as README's "Running it distributed" starts it: infra/stack/up.sh
 * runs every service as its own process (two harnesses) against the real Postgres and Kafka.
 * Driven with the official SDK through the gateway: a session runs a bash tool in a bubblewrap
 * sandbox; one harness is killed with SIGKILL and the next turn is answered by the other (its wake
 * comes from Kafka); every event reached the Kafka topic; the services speak only mutual TLS to each
 * other, and reach Kafka (with SASL or a client certificate) and PostgreSQL over TLS;
 * infra/stack/down.sh stops every process.
 */
import { execFile, spawn } from "node:child_process";
import { createServer } from "node:net";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Anthropic from "@anthropic-ai/sdk";
import { ListSessionsRequest, SandboxBrokerClient, SandboxBrokerService, SessionLogClient, SessionLogService } from "@metaharness/proto";
import { createClient, PLAINTEXT, promisify as promiseClient, type GrpcTls } from "@metaharness/service-kit/grpc";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTopic, type TopicReader } from "../../support/kafka.js";
import { secureListeners } from "../../support/kafka-secure.js";
import { eventually } from "../../support/eventually.js";
import { provisionOnHand } from "../../support/sandbox-broker.js";
import { callerTls } from "../../support/tls.js";
import { createTestDatabase, type TestDatabase } from "../../support/postgres.js";
import { deleteTopic, KAFKA_BROKERS } from "../../support/topics.js";

const run = promisify(execFile);
const ROOT = new URL("../../../", import.meta.url).pathname;

let db: TestDatabase;
let dir = "";
let env: Record<string, string> = {};
let sdk: Anthropic;
let topic: TopicReader;
/** The session of the first test, for the later ones. */
let firstSession = "";
const kafkaTopic = `mh-stack-${randomBytes(4).toString("hex")}`;

beforeAll(async () => {
  db = await createTestDatabase("mh_stack");
  dir = await mkdtemp(join(tmpdir(), "mh-stack-"));
  const scenarios = join(dir, "scenarios.json");
  await writeFile(
    scenarios,
    JSON.stringify({
      compute: {
        steps: [
          { text: "Computing.", toolUses: [{ name: "bash", input: { command: "echo $((6 * 7)) | tee answer.txt" } }] },
          { text: "The sandbox said {{last_tool_result}}" },
        ],
        onExhausted: "repeat-last",
      },
    }),
  );
  const base = await portBase();
  env = {
    ...(process.env as Record<string, string>),
    MH_DATABASE_URL: db.url,
    MH_KAFKA_BROKERS: KAFKA_BROKERS,
    MH_KAFKA_TOPIC: kafkaTopic,
    MH_KAFKA_GROUP: `${kafkaTopic}-harness`,
    MH_STACK_DIR: join(dir, "stack"),
    MH_STACK_PORT_BASE: String(base),
    MH_STACK_HTTP_PORT: String(base + 15),
    MH_STACK_MODEL_PORT: String(base + 16),
    MH_OFFLINE_MODEL_SCENARIOS: scenarios,
    MH_LOG_LEVEL: "info",
  };
  delete env["ANTHROPIC_API_KEY"];
  topic = await readTopic(kafkaTopic);
  const { stdout } = await run("bash", [join(ROOT, "infra/stack/up.sh")], { env, cwd: ROOT, timeout: 90_000 });
  const out: Record<string, string> = {};
  for (const line of stdout.trim().split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  sdk = new Anthropic({ apiKey: out["MH_API_KEY"], baseURL: out["MH_URL"], maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  if (dir !== "") await run("bash", [join(ROOT, "infra/stack/down.sh")], { env, cwd: ROOT, timeout: 120_000 }).catch(() => undefined);
  await topic?.close();
  await deleteTopic(kafkaTopic);
  await db?.drop();
  if (dir !== "") await rm(dir, { recursive: true, force: true });
}, 150_000);

async function untilIdle(sessionId: string, idles: number, timeoutMs = 30_000): Promise<Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[]> {
  let seen: string[] = [];
  return eventually(
    async () => {
      const events: Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[] = [];
      for await (const e of sdk.beta.sessions.events.list(sessionId)) events.push(e);
      seen = events.map((e) => e.type);
      return events.filter((e) => e.type === "session.status_idle").length >= idles ? events : undefined;
    },
    () => `session ${sessionId} to be idle ${idles} times: ${seen.join(", ")}`,
    timeoutMs,
  );
}

/**
 * A base for up.sh's fixed offsets (+1 ... +11; the gateway and the model at +15, +16) whose ports are all free, below Linux's ephemeral
 * range (32768-60999): there an outgoing connection may hold a port between our check and the bind.
 */
async function portBase(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const base = 10_000 + Math.floor(Math.random() * 1_000) * 20;
    const free = await Promise.all([1, 3, 4, 5, 10, 11, 15, 16].map((o) => canListen(base + o)));
    if (free.every(Boolean)) return base;
  }
  throw new Error("no free block of ports for the stack");
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** The remote ports of a process's established TCP connections among the Kafka broker's listeners. */
async function kafkaPortsOf(pid: number): Promise<number[]> {
  const listeners = secureListeners();
  const kafka = [KAFKA_BROKERS, listeners.saslSslBrokers, listeners.sslBrokers].map((a) => Number(a.split(":").at(-1)));
  const { stdout } = await run("ss", ["-Htnp", "state", "established"]);
  return stdout
    .split("\n")
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => Number(line.trim().split(/\s+/)[3]?.split(":").at(-1)))
    .filter((p) => kafka.includes(p));
}

const pidOf = async (name: string): Promise<number> => Number(await readFile(join(dir, "stack", "pids", `${name}.pid`), "utf8"));
/** Running, not a zombie waiting for init to reap it (kill -0 would count those). */
const alive = async (pid: number): Promise<boolean> => {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  const state = /\) (\S)/.exec(stat)?.[1];
  return state !== undefined && state !== "Z" && state !== "X";
};

describe("infra/stack: every service its own process", () => {
  it("runs a session with a sandbox tool, survives a harness killed with SIGKILL, publishes every event", async () => {
    const agent = await sdk.beta.agents.create({
      name: "computer",
      model: "claude-sonnet-5-5",
      system: "[scenario:compute]",
      tools: [{ type: "agent_toolset_20260401" }],
    });
    const environment = await sdk.beta.environments.create({ name: `stack-${randomBytes(3).toString("hex")}` });
    const session = await sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
    firstSession = session.id;
    await sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: "compute" }] }] });
    const first = await untilIdle(session.id, 1);
    const result = first.find((e) => e.type === "agent.tool_result");
    expect(JSON.stringify(result)).toContain("42");

    // The gateway's harness dies; the next turn's wake reaches the other one through Kafka.
    const victim = await pidOf("harness-1");
    process.kill(victim, "SIGKILL");
    const t0 = Date.now();
    await sdk.beta.sessions.events.send(session.id, { events: [{ type: "user.message", content: [{ type: "text", text: "again" }] }] });
    const second = await untilIdle(session.id, 2);
    expect(Date.now() - t0).toBeLessThan(15_000);
    const texts = second.filter((e) => e.type === "agent.message").map((e) => JSON.stringify(e));
    expect(texts.at(-1)).toContain("42");
    const harness2Log = await readFile(join(dir, "stack", "logs", "harness-2.log"), "utf8");
    expect(harness2Log).toContain(session.id);

    // A Kafka consumer sees the whole session, densely numbered.
    const seqs = (): number[] => topic.received.filter((r) => r.key === session.id).map((r) => r.event.seq);
    await topic.waitFor(() => new Set(seqs()).size >= second.length, 15_000);
    const unique = [...new Set(seqs())].sort((a, b) => a - b);
    expect(unique).toEqual(unique.map((_, i) => i + 1));
  }, 90_000);

  it("serves gRPC only over mutual TLS: a token alone, or a TLS client without a certificate, gets nowhere", async () => {
    const sec = join(dir, "stack", "secrets");
    const token = (await readFile(join(sec, "gateway-log.token"), "utf8")).trim();
    const address = `127.0.0.1:${Number(env["MH_STACK_PORT_BASE"]) + 1}`;
    const listVia = async (tls: GrpcTls): Promise<number> => {
      const raw = createClient(SessionLogClient, address, { bearerToken: token, credentials: tls.client });
      try {
        const page = await promiseClient(raw, SessionLogService).listSessions(ListSessionsRequest.fromPartial({ pageSize: 1 }), { deadlineMs: 5_000 });
        return page.sessions.length;
      } finally {
        raw.close();
      }
    };
    expect(await listVia(await callerTls(join(sec, "tls"), "gateway"))).toBe(1);
    await expect(listVia(PLAINTEXT)).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await expect(listVia(await callerTls(join(sec, "tls"), undefined))).rejects.toMatchObject({ code: "UNAVAILABLE" });
    for (const name of ["session-log", "credential-vault-proxy", "sandbox-broker", "harness-2"]) {
      expect(await readFile(join(dir, "stack", "logs", `${name}.log`), "utf8")).toMatch(/"tls":true/);
    }
  }, 30_000);

  it("reaches Kafka over TLS: the session log with SCRAM-SHA-512, the harnesses with a client certificate, never in clear", async () => {
    const listeners = secureListeners();
    const port = (address: string): number => Number(address.split(":").at(-1));
    const logPorts = await kafkaPortsOf(await pidOf("session-log"));
    const harnessPorts = await kafkaPortsOf(await pidOf("harness-2"));
    expect(logPorts).toContain(port(listeners.saslSslBrokers));
    expect(harnessPorts).toContain(port(listeners.sslBrokers));
    expect([...logPorts, ...harnessPorts]).not.toContain(port(KAFKA_BROKERS));
    expect(await readFile(join(dir, "stack", "logs", "session-log.log"), "utf8")).toContain('"kafka":"tls+scram-sha-512"');
    expect(await readFile(join(dir, "stack", "logs", "harness-2.log"), "utf8")).toContain('"kafka":"tls+client-certificate"');
  }, 30_000);

  it("reaches PostgreSQL over TLS, checking the server's certificate: no connection the services hold is plaintext", async () => {
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ name: string; ssl: boolean }>(
        "SELECT a.application_name AS name, s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.datname = $1 AND a.pid <> pg_backend_pid()",
        [db.name],
      );
      // Each service names its connections. Pools close idle ones; the log's two LISTEN
      // connections and its relay's stay.
      const names = new Set(rows.map((r) => r.name));
      expect(names).toContain("session-log");
      expect([...names].filter((n) => !["session-log", "mh-outbox-relay", "credential-vault-proxy", "sandbox-broker", "gateway"].includes(n))).toEqual([]);
      expect(rows.filter((r) => !r.ssl)).toEqual([]);
    } finally {
      await admin.end();
    }
  }, 30_000);

  it("an external hand connects over mutual TLS with the token the stack issued it, and serves a session", async () => {
    const sec = join(dir, "stack", "secrets");
    const tls = (name: string) => ({ MH_GRPC_TLS_CA_FILE: join(sec, "tls", "ca.pem"), MH_GRPC_TLS_CERT_FILE: join(sec, "tls", `${name}.pem`), MH_GRPC_TLS_KEY_FILE: join(sec, "tls", `${name}.key`) });
    const brokerAddress = `127.0.0.1:${Number(env["MH_STACK_PORT_BASE"]) + 3}`;
    const device = spawn(process.execPath, [join(ROOT, "apps/sandbox-broker/dist/examples/kv-device.js")], {
      env: { PATH: process.env["PATH"] ?? "", MH_SANDBOX_BROKER_ADDR: brokerAddress, MH_HAND_TOKEN_FILE: join(sec, "hand-broker.token"), MH_HAND_ID: "stack-kv", MH_LOG_LEVEL: "silent", ...tls("hand") },
      stdio: "ignore",
    });
    const raw = createClient(SandboxBrokerClient, brokerAddress, {
      bearerToken: (await readFile(join(sec, "harness-broker.token"), "utf8")).trim(),
      credentials: (await callerTls(join(sec, "tls"), "harness")).client,
    });
    try {
      const broker = promiseClient(raw, SandboxBrokerService);
      const sandboxId = await provisionOnHand(broker, firstSession, "kv-device");
      const call = (name: string, input: Record<string, string>, callId: string) =>
        broker.execute({ eventSeq: 0, sandboxId, sessionId: firstSession, name, input, callId, timeoutMs: 0 });
      expect(await call("kv_set", { key: "stack", value: "over mTLS" }, "kv-1")).toMatchObject({ isError: false });
      expect((await call("kv_get", { key: "stack" }, "kv-2")).output).toBe("over mTLS");
    } finally {
      raw.close();
      device.kill("SIGTERM");
    }
  }, 30_000);

  it("deleting a session through the gateway releases its sandboxes on the broker", async () => {
    const sec = join(dir, "stack", "secrets");
    const raw = createClient(SandboxBrokerClient, `127.0.0.1:${Number(env["MH_STACK_PORT_BASE"]) + 3}`, {
      bearerToken: (await readFile(join(sec, "harness-broker.token"), "utf8")).trim(),
      credentials: (await callerTls(join(sec, "tls"), "harness")).client,
    });
    try {
      const broker = promiseClient(raw, SandboxBrokerService);
      const held = (await broker.listSandboxes({ sessionId: firstSession, includeEnded: false })).sandboxes;
      expect(held.length).toBeGreaterThan(0);
      await sdk.beta.sessions.delete(firstSession);
      const ended = await eventually(async () => {
        const all = (await broker.listSandboxes({ sessionId: firstSession, includeEnded: true })).sandboxes;
        const mine = all.filter((s) => held.some((h) => h.sandboxId === s.sandboxId));
        return mine.every((s) => s.reason !== "") ? mine : undefined;
      }, "the deleted session's sandboxes to be released", 20_000);
      expect(ended.map((s) => s.reason)).toEqual(held.map(() => "its session ended"));
    } finally {
      raw.close();
    }
  }, 30_000);

  it("every line a service wrote is a JSON log line, Node's own warnings included", async () => {
    const logs = join(dir, "stack", "logs");
    const files = await readdir(logs);
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const file of files) {
      const lines = (await readFile(join(logs, file), "utf8")).split("\n").filter((l) => l !== "");
      const plain = lines.filter((l) => {
        try {
          return typeof JSON.parse(l) !== "object";
        } catch {
          return true;
        }
      });
      expect({ file, plain }).toEqual({ file, plain: [] });
    }
  });

  it("down.sh stops every process it started", async () => {
    const pids = await Promise.all((await readdir(join(dir, "stack", "pids"))).map((f) => pidOf(f.replace(/\.pid$/, ""))));
    expect(pids.length).toBeGreaterThanOrEqual(6);
    await run("bash", [join(ROOT, "infra/stack/down.sh")], { env, cwd: ROOT, timeout: 120_000 });
    const running = await Promise.all(pids.map(alive));
    expect(pids.filter((_, i) => running[i])).toEqual([]);
  }, 150_000);
});
