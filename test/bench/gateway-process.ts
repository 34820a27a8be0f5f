/**
 * The gateway as a process of its own (its built dist/main.js, as deployed) for the benchmarks
 * that drive turns through the official SDK (scale-stack.ts for harness-scale and gateway-turn,
 * turn-cpu-stack.ts for `turn-cpu --via=sdk`): a fresh database of the real Postgres, the session
 * log and the harness it calls, one API key, and the SDK built as a user builds it.
 */
import Anthropic from "@anthropic-ai/sdk";
import { createTestDatabase, type TestDatabase } from "../support/postgres.js";
import { startProcess, type ServiceProcess } from "../support/process.js";

export const SCALE_API_KEY = "mh-bench-scale-key-0123456789abcdef";

export interface GatewayProcessOptions {
  readonly logAddress: string;
  /** A file holding the gateway's token for the session log. */
  readonly logTokenFile: string;
  readonly harnessAddress: string;
  /** A file holding the gateway's token for the harness. */
  readonly harnessTokenFile: string;
  /** Extra node flags (e.g. --cpu-prof). */
  readonly nodeArgs?: readonly string[];
  /** The environment's additions (a log level, say); errors only unless given. */
  readonly env?: Record<string, string>;
}

export interface GatewayProcess {
  readonly process: ServiceProcess;
  readonly db: TestDatabase;
  /** The SDK as a user builds it (apiKey and baseURL), on this gateway. */
  sdk(): Anthropic;
  /** Kills the process, then drops its database. */
  stop(): Promise<void>;
}

export async function startGatewayProcess(opts: GatewayProcessOptions): Promise<GatewayProcess> {
  const db = await createTestDatabase("mh_bench_gw");
  try {
    const gateway = await startProcess(
      "gateway",
      {
        MH_HTTP_PORT: "0",
        MH_DATABASE_URL: db.url,
        MH_SESSION_LOG_ADDR: opts.logAddress,
        MH_SESSION_LOG_TOKEN_FILE: opts.logTokenFile,
        MH_HARNESS_ADDR: opts.harnessAddress,
        MH_HARNESS_TOKEN_FILE: opts.harnessTokenFile,
        MH_GATEWAY_API_KEYS: `${SCALE_API_KEY}:bench`,
        MH_LOG_LEVEL: "error",
        ...opts.env,
      },
      async (port) => {
        await new Anthropic({ apiKey: SCALE_API_KEY, baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 }).beta.agents.list();
      },
      opts.nodeArgs ?? [],
    );
    return {
      process: gateway,
      db,
      sdk: () => new Anthropic({ apiKey: SCALE_API_KEY, baseURL: `http://127.0.0.1:${gateway.port}`, maxRetries: 2 }),
      async stop() {
        await gateway.kill("SIGTERM").catch(() => undefined);
        await db.drop();
      },
    };
  } catch (err) {
    await db.drop().catch(() => undefined);
    throw err;
  }
}
