/**
 * A Prometheus of the test's own (never the machine's shared services): the binary that
 * infra/prometheus/up.sh builds into MH_CACHE (or MH_PROMETHEUS_BIN), started on port 0 with a
 * fresh data folder, scraping the given `/metrics` URLs every second; `query` is its HTTP API's
 * instant query. Undefined when no binary is there.
 */
import { spawn } from "node:child_process";
import { access, mkdtemp, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "./eventually.js";
import { listeningPorts } from "./process.js";

/** The version infra/prometheus/up.sh builds (PROMETHEUS_VERSION there). */
export const PROMETHEUS_VERSION = "v0.316.0";

export interface TestPrometheus {
  readonly url: string;
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  stop(): Promise<void>;
}

export function prometheusBinary(tool: "prometheus" | "promtool" = "prometheus"): string {
  const given = process.env[tool === "prometheus" ? "MH_PROMETHEUS_BIN" : "MH_PROMTOOL_BIN"];
  if (given !== undefined && given !== "") return given;
  const cache = process.env["MH_CACHE"] ?? join(process.env["XDG_CACHE_HOME"] ?? join(homedir(), ".cache"), "metaharness");
  return join(cache, tool, PROMETHEUS_VERSION, tool);
}

export async function startPrometheus(targets: readonly string[]): Promise<TestPrometheus | undefined> {
  const bin = prometheusBinary();
  if (!(await access(bin).then(() => true, () => false))) return undefined;
  const dir = await mkdtemp(join(tmpdir(), "mh-prometheus-"));
  const jobs = targets.map((t, i) => {
    const u = new URL(t);
    return `  - job_name: target${i}\n    scrape_interval: 1s\n    metrics_path: ${u.pathname}\n    static_configs:\n      - targets: ["${u.host}"]\n`;
  });
  await writeFile(join(dir, "prometheus.yml"), `global:\n  scrape_interval: 1s\nscrape_configs:\n${jobs.join("")}`);
  const child = spawn(bin, [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, "--web.listen-address=127.0.0.1:0"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const port = await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited at start:\n${out}`);
        for (const p of child.pid === undefined ? [] : await listeningPorts(child.pid)) {
          if (await fetch(`http://127.0.0.1:${p}/-/ready`).then((r) => r.ok, () => false)) return p;
        }
        return undefined;
      },
      () => `prometheus to be ready (60 s):\n${out}`,
      60_000,
    );
    const url = `http://127.0.0.1:${port}`;
    return {
      url,
      async query(promql) {
        const r = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
        const body = (await r.json()) as { status: string; data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> }; error?: string };
        if (body.status !== "success") throw new Error(`query ${promql}: ${body.error ?? r.status}`);
        return body.data?.result ?? [];
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
