/**
 * A service that cannot start says why in one JSON line on stdout and exits with 1 (what a log
 * pipeline and a restarting orchestrator read), naming the setting or the server at fault: a bad
 * value, PostgreSQL refusing the connection, a server certificate it cannot check against the CA
 * it was given, Kafka settings that cannot work. With the right CA, the same service talks to
 * PostgreSQL only over TLS. After a start, Node's warnings and a crash are log lines too.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeFlagsOf } from "../../support/node-flags.js";
import { createTestDatabase, type TestDatabase } from "../../support/postgres.js";
import { writeServiceTokens, type ServiceTokenFiles } from "../../support/service-tokens.js";
import { mintDevCerts, type DevCerts } from "../../support/tls.js";

const ROOT = new URL("../../../", import.meta.url).pathname;
const LOG_MAIN = join(ROOT, "apps/session-log/dist/main.js");
const HARNESS_MAIN = join(ROOT, "apps/harness/dist/main.js");
const CRASHING_MAIN = ["--import", "tsx", join(ROOT, "test/support/crashing-service-main.ts")];

let db: TestDatabase;
let tokens: ServiceTokenFiles<"admin">;
let otherCa: DevCerts;
beforeAll(async () => {
  db = await createTestDatabase("mh_start");
  tokens = await writeServiceTokens(["admin"] as const);
  otherCa = await mintDevCerts(["unrelated"]);
});
afterAll(async () => {
  await db?.drop();
  await tokens?.dispose();
  await otherCa?.dispose();
});

interface Ended {
  readonly code: number | null;
  readonly lines: string[];
  readonly stderr: string;
}

/**
 * Runs a service's main with only `env` (and PATH) until it exits; `serving`: once a line matches,
 * runs `then` while the service is up, and stops it with SIGTERM.
 */
function runMain(main: string | readonly string[], env: Record<string, string>, serving?: { line: RegExp; then: () => Promise<void> }): Promise<Ended> {
  return new Promise((resolve, reject) => {
    // A built service's main runs with the node flags it is deployed with (support/node-flags.ts).
    const argv = typeof main === "string" ? [...nodeFlagsOf(main), main] : [...main];
    const child = spawn(process.execPath, argv, { env: { PATH: process.env["PATH"] ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    let seen = false;
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${argv.join(" ")} did not exit in 20 s:\n${out}${err}`));
    }, 20_000);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      if (serving === undefined || seen || !serving.line.test(out)) return;
      seen = true;
      serving.then().then(
        () => child.kill("SIGTERM"),
        (e: unknown) => {
          child.kill("SIGKILL");
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, lines: out.split("\n").filter((l) => l !== ""), stderr: err });
    });
  });
}

/** The one fatal line a failed start leaves: its message. */
function fatal(ended: Ended): string {
  expect(ended.code).toBe(1);
  expect(ended.stderr).not.toContain("triggerUncaughtException");
  const last = JSON.parse(ended.lines.at(-1) ?? "{}") as { level?: string; msg?: string };
  expect(last.level).toBe("fatal");
  return last.msg ?? "";
}

const logEnv = (extra: Record<string, string>): Record<string, string> => ({
  MH_GRPC_PORT: "0",
  MH_RELAY_ENABLED: "false",
  MH_SERVICE_TOKENS_FILE: tokens.file,
  MH_DATABASE_URL: db.url,
  ...extra,
});
const withTls = (url: string, ca: string): string => `${url}?sslmode=verify-full&sslrootcert=${ca}`;

describe("a start that fails", () => {
  it("names every bad setting", async () => {
    const msg = fatal(await runMain(LOG_MAIN, { MH_GRPC_PORT: "http" }));
    expect(msg).toMatch(/^session-log could not start: invalid configuration: MH_GRPC_PORT="http" is invalid .*; MH_SERVICE_TOKENS_FILE is not set/);
  });

  it("names the PostgreSQL server that refused, without its password", async () => {
    const url = new URL(db.url);
    url.port = "1";
    const msg = fatal(await runMain(LOG_MAIN, logEnv({ MH_DATABASE_URL: url.toString() })));
    expect(msg).toBe(`session-log could not start: PostgreSQL at 127.0.0.1:1/${db.name} cannot be used: connect ECONNREFUSED 127.0.0.1:1`);
    expect(msg).not.toContain(url.password);
  });

  it("refuses a PostgreSQL server whose certificate the given CA did not sign", async () => {
    const msg = fatal(await runMain(LOG_MAIN, logEnv({ MH_DATABASE_URL: withTls(db.url, otherCa.ca) })));
    expect(msg).toMatch(/PostgreSQL at 127\.0\.0\.1:\d+\/\w+ cannot be used: (unable to verify the first certificate|self-signed certificate)/);
  });

  it("refuses Kafka settings that would send a password in clear, naming the setting", async () => {
    const msg = fatal(
      await runMain(HARNESS_MAIN, {
        MH_GRPC_PORT: "0",
        MH_SERVICE_TOKENS_FILE: tokens.file,
        MH_SESSION_LOG_TOKEN_FILE: tokens.tokenFile.admin,
        MH_KAFKA_WAKE: "true",
        MH_KAFKA_SASL_MECHANISM: "plain",
        MH_KAFKA_SASL_USERNAME: "svc",
        MH_KAFKA_SASL_PASSWORD_FILE: tokens.tokenFile.admin,
      }),
    );
    expect(msg).toMatch(/^harness could not start: MH_KAFKA_SASL_MECHANISM=plain sends the password as is/);
  });
});

describe("after a start", () => {
  it("Node's warnings are warn lines, and a crash is one fatal line and exit 1, never Node's plain text", async () => {
    const ended = await runMain(CRASHING_MAIN, {});
    expect(ended.stderr).toBe("");
    const lines = ended.lines.map((l) => JSON.parse(l) as { level?: string; msg?: string; origin?: string; warning?: { code?: string } });
    expect(lines.find((l) => l.level === "warn")).toMatchObject({ msg: "a warning the service did not cause", warning: { code: "MH_TEST_WARNING" } });
    expect(fatal(ended)).toBe("crashing-service crashed: nobody handles this");
    expect(lines.at(-1)?.origin).toBe("unhandledRejection");
  });

  it("a crash with a thrown value that is not an Error is reported all the same", async () => {
    const ended = await runMain(CRASHING_MAIN, { MH_TEST_THROW: "null" });
    expect(ended.stderr).toBe("");
    expect(fatal(ended)).toBe("crashing-service crashed: null");
  });
});

describe("with the CA that signed the server's certificate", () => {
  it("talks to PostgreSQL only over TLS", async () => {
    const ca = process.env["MH_PG_CA_FILE"];
    if (ca === undefined) throw new Error("MH_PG_CA_FILE is not set: start the services with infra/up.sh and use its output");
    let connections: Array<{ ssl: boolean }> = [];
    const check = async (): Promise<void> => {
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      try {
        connections = (
          await admin.query<{ ssl: boolean }>(
            "SELECT s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.datname = $1 AND a.pid <> pg_backend_pid()",
            [db.name],
          )
        ).rows;
      } finally {
        await admin.end();
      }
    };
    const ended = await runMain(LOG_MAIN, logEnv({ MH_DATABASE_URL: withTls(db.url, ca) }), { line: /session-log serving/, then: check });
    expect(ended.code).toBe(0);
    expect(ended.lines.join("\n")).toContain("session-log serving");
    expect(connections.length).toBeGreaterThan(0);
    expect(connections.filter((c) => !c.ssl)).toEqual([]);
  });
});
