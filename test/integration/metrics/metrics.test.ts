/**
 * Every metric of the catalog (packages/telemetry's METRICS) from a session on the whole stack:
 * the services run in this process, whose meter provider serves `/metrics` on port 0; a session
 * with a retried model request, a bash call in a real bubblewrap sandbox and an event stream
 * (SSE), a lease taken over, a refusal of the credential vault proxy and a sandbox reaped idle
 * make every series exist. Then: each catalog metric is exported, and every exported series
 * carries only its metric's declared labels, with no session, sandbox or event id and no user
 * text in any value (low cardinality). When a Prometheus binary is there (infra/prometheus/up.sh
 * builds it; MH_PROMETHEUS_BIN), a Prometheus of the test's own scrapes the endpoint and each
 * metric is read back through its HTTP API, and so is every panel's query of the dashboards
 * (infra/grafana/dashboards.ts), whose provisioned JSON files must be that module's output.
 */
import { randomBytes } from "node:crypto";
import { newEvent } from "@metaharness/events";
import { defineScenario } from "@metaharness/offline-model";
import { StopReasonType } from "@metaharness/proto";
import { METRICS, promLabel, promName, startTelemetry, type MetricDef, type Telemetry } from "@metaharness/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, startStack, type Stack } from "../../support/gateway.js";
import { idleReason } from "../../support/harness.js";
import { eventually } from "../../support/eventually.js";
import { startPrometheus, type TestPrometheus } from "../../support/prometheus.js";
import { dashboardFile, dashboards } from "../../../infra/grafana/dashboards.js";
import { readFile } from "node:fs/promises";

const USER_TEXT = `count the files ${randomBytes(4).toString("hex")}`;
const scenarios = [
  defineScenario("metrics", [
    { failFirst: { times: 1, status: 529, retryAfterSeconds: 0 }, text: "Counting.", toolUses: [{ name: "bash", input: { command: "ls | wc -l" } }] },
    () => ({ text: "Done." }),
  ]),
];

/** Labels every series may carry besides its metric's own. */
const ANY_SERIES = new Set(["le", "job", "instance"]);
/** What an id of ours looks like (sesn_..., sbx_..., sevt_...), or a long random hex. */
const ID_LIKE = /(^|[^a-z])(sesn|sbx|sevt|agent|env|req)_[A-Za-z0-9]{6,}|[0-9a-f]{16,}/;

let telemetry: Telemetry;
let stack: Stack;
let scrapeUrl: string;
let sessionId: string;
let prometheus: TestPrometheus | undefined;

interface Series {
  readonly name: string;
  readonly labels: Record<string, string>;
}

function parse(text: string): Series[] {
  const out: Series[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? /.exec(line);
    if (m === null) throw new Error(`unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels });
  }
  return out;
}

const defs: readonly MetricDef[] = Object.values(METRICS);

/** The catalog metric a series belongs to (a histogram's _bucket, _sum and _count included). */
function metricOf(series: string): MetricDef | undefined {
  return defs.find((d) => {
    const base = promName(d);
    return d.kind === "histogram" ? [`${base}_bucket`, `${base}_sum`, `${base}_count`].includes(series) : series === base;
  });
}

async function scrape(): Promise<Series[]> {
  return parse(await (await fetch(scrapeUrl)).text());
}

beforeAll(async () => {
  telemetry = startTelemetry({ serviceName: `mh-metrics-test-${randomBytes(3).toString("hex")}`, metrics: { prometheusPort: 0 } });
  scrapeUrl = (await telemetry.metricsUrl())!;
  stack = await startStack({
    scenarios,
    broker: true,
    logEnv: { MH_RELAY_ENABLED: "true" },
    brokerEnv: { MH_SANDBOX_IDLE_TIMEOUT_SECONDS: "1", MH_REAP_INTERVAL_MS: "100" },
  });
  const sdk = stack.client(KEY_A).sdk;
  const env = await sdk.beta.environments.create({ name: "metrics" });
  const agent = await sdk.beta.agents.create({ name: "m", model: "claude-sonnet-4-5", system: "[scenario:metrics]", tools: [{ type: "agent_toolset_20260401" }] });
  sessionId = (await sdk.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
  // An event stream open while the session runs: the gateway's SSE gauge and the log's WatchEvents.
  const stream = await sdk.beta.sessions.events.stream(sessionId);
  const reading = (async () => {
    for await (const e of stream) if (e.type === "session.status_idle") break;
  })();
  await sdk.beta.sessions.events.send(sessionId, { events: [{ type: "user.message", content: [{ type: "text", text: USER_TEXT }] }] });
  await stack.brain.waitFor(sessionId, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN, 60_000);
  await reading;

  // A lease taken over: one holder's lease expires mid-turn (its session running: an idle
  // session's lease running out is a linger's end, not counted), another takes it.
  const other = await stack.brain.createSession();
  const stalled = await stack.brain.log.client.acquireLease({ sessionId: other, holder: "metrics-test-a", ttlMs: 500 });
  await stack.brain.log.client.emitEvent({ sessionId: other, event: newEvent("session.status_running", {}), leaseEpoch: stalled.lease!.epoch });
  const taken = await eventually(() => stack.brain.log.client.acquireLease({ sessionId: other, holder: "metrics-test-b", ttlMs: 500 }).then((r) => r, () => undefined), "the expired lease taken over", 10_000);
  // Ended, so no harness of the stack picks up a running session nobody drives.
  await stack.brain.log.client.emitEvent({ sessionId: other, event: newEvent("session.status_terminated", {}), leaseEpoch: taken.lease!.epoch });
  // A refusal of the credential vault proxy: its remote endpoint without a service token.
  expect((await fetch(`${stack.vault!.handle.remoteUrl}/git/nothing/info/refs`)).status).toBe(401);

  // The idle sandbox reaped (a loss, idle_timeout) and the relay's sends: every metric is there.
  await eventually(async () => {
    const names = new Set((await scrape()).map((s) => metricOf(s.name)?.name));
    return defs.every((d) => names.has(d.name)) ? true : undefined;
  }, "every catalog metric exported", 30_000).catch(async (err: unknown) => {
    const names = new Set((await scrape()).map((s) => metricOf(s.name)?.name));
    throw new Error(`${String(err)}; missing: ${defs.filter((d) => !names.has(d.name)).map((d) => d.name).join(", ")}`);
  });
  prometheus = await startPrometheus([scrapeUrl]);
}, 180_000);

afterAll(async () => {
  await prometheus?.stop();
  await stack?.stop();
  await telemetry?.shutdown();
});

describe("metrics of a session", () => {
  it("every series carries only its metric's labels, and no id or user text", async () => {
    const series = await scrape();
    const problems: string[] = [];
    for (const s of series) {
      if (s.name === "target_info") continue;
      const d = metricOf(s.name);
      if (d === undefined) {
        problems.push(`${s.name} is in no catalog entry`);
        continue;
      }
      const allowed = new Set(d.labels.map(promLabel));
      for (const [key, value] of Object.entries(s.labels)) {
        if (!allowed.has(key) && !ANY_SERIES.has(key)) problems.push(`${s.name} has label ${key}`);
        if (ID_LIKE.test(value) || value.includes(USER_TEXT) || value.includes(sessionId)) problems.push(`${s.name} {${key}="${value}"} looks like an id or user text`);
      }
    }
    expect(problems).toEqual([]);
    expect(series.length).toBeGreaterThan(defs.length);
  });

  it("says what the session did", async () => {
    const series = await scrape();
    const has = (name: string, labels: Record<string, string>) =>
      series.some((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    expect(has(promName(METRICS.toolCalls), { gen_ai_tool_name: "bash", outcome: "ok" })).toBe(true);
    expect(has(promName(METRICS.modelRetries), { "error_type": "model_overloaded_error" }) || has(promName(METRICS.modelRetries), {})).toBe(true);
    expect(has(`${promName(METRICS.tokens)}_count`, { gen_ai_token_type: "output", tenant: "tenant-a" })).toBe(true);
    expect(has(`${promName(METRICS.turnDuration)}_count`, { stop_reason: "end_turn" })).toBe(true);
    expect(has(`${promName(METRICS.provisionDuration)}_count`, { kind: "bubblewrap" })).toBe(true);
    expect(has(promName(METRICS.sandboxLosses), { cause: "idle_timeout" })).toBe(true);
    expect(has(promName(METRICS.proxyRefusals), { kind: "git", reason: "no_service_token" })).toBe(true);
    expect(has(`${promName(METRICS.httpDuration)}_count`, { http_route: "/v1/sessions/:session_id/events/stream", http_response_status_code: "200" })).toBe(true);
    expect(has(promName(METRICS.kafkaSent), { messaging_system: "kafka" })).toBe(true);
  });

  it("a real Prometheus scrapes them and answers for every metric", async (ctx) => {
    if (prometheus === undefined) return ctx.skip("no Prometheus binary (run infra/prometheus/up.sh, or set MH_PROMETHEUS_BIN)");
    const p = prometheus;
    for (const d of defs) {
      const query = d.kind === "histogram" ? `${promName(d)}_count` : promName(d);
      const result = await eventually(async () => {
        const r = await p.query(query);
        return r.length > 0 ? r : undefined;
      }, `Prometheus has ${query}`, 30_000);
      expect(result.length, query).toBeGreaterThan(0);
    }
  }, 120_000);

  it("the provisioned dashboards are dashboards.ts's output", async () => {
    for (const [name, d] of Object.entries(dashboards())) {
      const file = JSON.parse(await readFile(dashboardFile(name), "utf8")) as unknown;
      expect(file, `${dashboardFile(name)}: run npx tsx infra/grafana/dashboards.ts`).toEqual(JSON.parse(JSON.stringify(d)));
    }
  });

  it("every panel's query returns data from the real Prometheus", async (ctx) => {
    if (prometheus === undefined) return ctx.skip("no Prometheus binary (run infra/prometheus/up.sh, or set MH_PROMETHEUS_BIN)");
    const p = prometheus;
    let queries = 0;
    for (const [name, d] of Object.entries(dashboards())) {
      for (const panel of d.panels ?? []) {
        if (!("targets" in panel)) continue;
        for (const target of panel.targets ?? []) {
          const expr = (target as { expr?: string }).expr?.replaceAll("$tenant", "tenant-a");
          if (expr === undefined) continue;
          queries++;
          // rate() and increase() need two scrapes of a series: waited for, never slept.
          await eventually(async () => ((await p.query(expr)).length > 0 ? true : undefined), `${name} / ${panel.title}: ${expr} returns data`, 30_000);
        }
      }
    }
    expect(queries).toBeGreaterThan(20);
  }, 180_000);
});
