/**
 * The trace page in headless Chromium, on the whole stack with the real Jaeger (infra/jaeger):
 * every service of this process exports its spans to Jaeger over OTLP, the gateway reads them
 * back from Jaeger's query API (MH_JAEGER_QUERY_URL). A person runs a session with a sandbox tool
 * call, opens the session page, follows an event's trace link and sees the waterfall: the
 * harness step, the session log's appends under it, the broker's call, the event's own span
 * highlighted; a row opens to its attributes. Another tenant's key gets a 404 for that trace, as
 * does a trace naming sessions of two tenants; Jaeger unreachable is a 503. Screenshots go to
 * __screenshots__/.
 *
 * Without a running Jaeger the tests are skipped with the reason, unless MH_REQUIRE_JAEGER=1.
 */
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type Anthropic from "@anthropic-ai/sdk";
import { loadConfig, loadUiConfig, startGateway, type GatewayHandle } from "@metaharness/gateway";
import { defineScenario } from "@metaharness/offline-model";
import { StopReasonType, type Event } from "@metaharness/proto";
import { createLogger } from "@metaharness/service-kit/logging";
import { currentSpanIds, withSpan, type Telemetry } from "@metaharness/telemetry";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import { KEY_A, KEY_B, raw, startStack, type Stack } from "../../support/gateway.js";
import { idleReason } from "../../support/harness.js";
import { exportToJaeger, getTrace, JAEGER_QUERY_URL, jaegerSkipReason, waitForTraces, type JaegerTrace } from "../../support/jaeger.js";
import { launchChromium, newPage as openPage } from "./browser.js";

const SCREENSHOTS = fileURLToPath(new URL("./__screenshots__/", import.meta.url));
const CALL_MODEL = "harness.call-model";
const RUN_TOOLS = "harness.run-tools";
const EMIT_EVENTS = "metaharness.v1.SessionLog/EmitEvents";
const EXECUTE = "metaharness.v1.SandboxBroker/Execute";
/** The official SDK's own span of a Messages API call. */
const MODEL_CALL = "anthropic.messages.create";

// One process, one tracer provider: every service here reports under this name, unique per run.
const serviceName = `mh-trace-page-test-${randomBytes(4).toString("hex")}`;

const scenarios = [
  defineScenario("trace-view", [
    { text: "Let me count the files.", toolUses: [{ name: "bash", input: { command: "echo traced > t.txt && ls | wc -l" } }] },
    (ctx) => ({ text: `There is ${ctx.lastToolResult?.content.trim() ?? "?"} file.` }),
  ]),
];

let unavailable: string | undefined;
let telemetry: Telemetry | undefined;
let stack: Stack | undefined;
let browser: Browser | undefined;
let context: BrowserContext;
let sdk: Anthropic;
let sessionA: string;
let sessionB: string;
let events: Event[];
const pageErrors: string[] = [];

beforeAll(async () => {
  unavailable = await jaegerSkipReason();
  if (unavailable !== undefined) return;
  telemetry = exportToJaeger(serviceName);
  stack = await startStack({ scenarios, broker: true, env: { MH_JAEGER_QUERY_URL: JAEGER_QUERY_URL } });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await mkdir(SCREENSHOTS, { recursive: true });

  sdk = stack.client(KEY_A).sdk;
  const env = await sdk.beta.environments.create({ name: "traces" });
  const agent = await sdk.beta.agents.create({ name: "counter", model: "claude-sonnet-4-5", system: "[scenario:trace-view]", tools: [{ type: "agent_toolset_20260401" }] });
  sessionA = (await sdk.beta.sessions.create({ agent: agent.id, environment_id: env.id, title: "Count the files" })).id;
  await sdk.beta.sessions.events.send(sessionA, { events: [{ type: "user.message", content: [{ type: "text", text: "How many files?" }] }] });
  events = await stack.brain.waitFor(sessionA, (e) => idleReason(e) === StopReasonType.STOP_REASON_TYPE_END_TURN, 30_000);

  const sdkB = stack.client(KEY_B).sdk;
  const agentB = await sdkB.beta.agents.create({ name: "b-agent", model: "claude-sonnet-4-5" });
  sessionB = (await sdkB.beta.sessions.create({ agent: agentB.id, environment_id: (await sdkB.beta.environments.create({ name: "b" })).id })).id;
});

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await stack?.stop();
  await telemetry?.shutdown().catch(() => undefined);
});

function needJaeger(ctx: TestContext): void {
  if (unavailable !== undefined) ctx.skip(unavailable);
}

function traceOf(type: string): { traceId: string; spanId: string; seq: number } {
  const event = events.find((e) => e.type === type);
  const [, traceId, spanId] = event?.traceContext?.traceparent.split("-") ?? [];
  if (event === undefined || traceId === undefined || spanId === undefined) throw new Error(`no traced ${type} event in ${events.map((e) => e.type).join(", ")}`);
  return { traceId, spanId, seq: event.seq };
}

/** The trace once Jaeger has every span `ready` asks for (spans arrive as the exporter flushes). */
async function traceWhen(traceId: string, ready: (t: JaegerTrace) => boolean): Promise<JaegerTrace> {
  const [trace] = await waitForTraces(() => getTrace(traceId).then((t) => [t], () => []), (ts) => ts[0] !== undefined && ready(ts[0]), 15_000);
  return trace!;
}

const has = (t: JaegerTrace, operation: string): boolean => t.spans.some((s) => s.operationName === operation);

const newPage = (): Promise<Page> => openPage(context, pageErrors);

async function signInIfAsked(page: Page, key: string): Promise<void> {
  const input = page.getByLabel("API key");
  await Promise.race([input.waitFor(), page.locator(".crumbs").waitFor()]);
  if (await input.isVisible()) {
    await input.fill(key);
    await page.getByRole("button", { name: "Open" }).click();
  }
}

const rowOf = (page: Page, operation: string) => page.locator(".span-row", { has: page.locator(".span-row__op", { hasText: operation }) });

describe("the trace page", () => {
  it("follows an event's trace link to a waterfall of the harness step and the session log's appends", async (ctx) => {
    needJaeger(ctx);
    const { traceId, spanId, seq } = traceOf("agent.tool_use");
    await traceWhen(traceId, (t) => has(t, CALL_MODEL) && has(t, EMIT_EVENTS));

    const page = await newPage();
    await page.goto(`${stack!.gateway.url}/ui/sessions/${sessionA}`);
    await signInIfAsked(page, KEY_A);
    const link = page.locator(`#ev-${seq} > .ev__meta a.trace-link`);
    await link.waitFor();
    expect(await link.getAttribute("href")).toBe(`/ui/traces/${traceId}?span=${spanId}`);
    expect(await link.getAttribute("target")).toBeNull();
    await link.click();
    await page.waitForURL(`**/ui/traces/${traceId}?span=${spanId}`);

    // The event's own span (the append that stored it) is highlighted, open and in view, under
    // the harness step that appended it.
    const target = page.locator(".span-row--target");
    await target.waitFor();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(`Trace ${traceId}`);
    expect(await target.getAttribute("data-span-id")).toBe(spanId);
    expect(await target.locator(".span-row__op").textContent()).toBe(EMIT_EVENTS);
    const stepId = await target.getAttribute("data-parent-span-id");
    const step = page.locator(`.span-row[data-span-id="${stepId}"]`);
    expect(await step.locator(".span-row__op").textContent()).toBe(CALL_MODEL);
    expect(await step.locator(".span-row__service").textContent()).toBe(serviceName);
    expect(Number(await target.getAttribute("data-depth"))).toBe(Number(await step.getAttribute("data-depth")) + 1);
    // Its other appends (the model request's start, the response) and the model call itself.
    const children = page.locator(`.span-row[data-parent-span-id="${stepId}"]`);
    expect(await children.filter({ has: page.locator(".span-row__op", { hasText: EMIT_EVENTS }) }).count()).toBeGreaterThanOrEqual(2);
    expect(await children.filter({ has: page.locator(".span-row__op", { hasText: MODEL_CALL }) }).count()).toBe(1);
    expect(await target.locator(".span-row__head").getAttribute("aria-current")).toBe("true");
    expect(await target.locator(".span-details").isVisible()).toBe(true);
    expect(await target.locator(".attrs").textContent()).toContain(sessionA);
    const box = await target.locator(".span-row__head").boundingBox();
    expect(box!.y).toBeGreaterThanOrEqual(0);
    expect(box!.y + box!.height).toBeLessThanOrEqual(page.viewportSize()!.height);

    // A row opens to the span's attributes, as the harness emitted them; the keyboard works too.
    await step.locator(".span-row__head").click();
    const details = step.locator(".span-details");
    await details.waitFor();
    const attrs = await details.locator(".attrs").textContent();
    expect(attrs).toContain(`mh.session_id${sessionA}`);
    expect(attrs).toMatch(/gen_ai\.usage\.output_tokens\d+/);
    expect(attrs).toContain("mh.model.ttft_ms");
    expect(await step.locator(".span-row__head").getAttribute("aria-expanded")).toBe("true");
    await step.locator(".span-row__head").focus();
    await page.keyboard.press("ArrowDown");
    const next = page.locator(".span-row__head:focus");
    expect(await next.getAttribute("aria-expanded")).toBe("false");
    await page.keyboard.press("Enter");
    expect(await next.getAttribute("aria-expanded")).toBe("true");

    await page.evaluate("window.scrollTo(0, 0)");
    await page.screenshot({ path: `${SCREENSHOTS}trace-model-step.png`, fullPage: true });

    // Back to the session.
    await page.locator(".crumbs__session").click();
    await page.waitForURL(`**/ui/sessions/${sessionA}`);
    await page.locator(`#ev-${seq}`).waitFor();
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it("shows the broker's call in the trace of a tool's result, in either colour scheme", async (ctx) => {
    needJaeger(ctx);
    const { traceId, spanId } = traceOf("agent.tool_result");
    await traceWhen(traceId, (t) => has(t, RUN_TOOLS) && has(t, EXECUTE) && has(t, EMIT_EVENTS));
    const page = await newPage();
    await page.goto(`${stack!.gateway.url}/ui/traces/${traceId}?span=${spanId}`);
    await signInIfAsked(page, KEY_A);
    await rowOf(page, EXECUTE).waitFor();
    expect(await rowOf(page, RUN_TOOLS).count()).toBe(1);
    expect(Number(await rowOf(page, EXECUTE).getAttribute("data-depth"))).toBeGreaterThan(Number(await rowOf(page, RUN_TOOLS).getAttribute("data-depth")));
    expect(await page.locator(".session-head .facts").textContent()).toContain(sessionA);
    await page.screenshot({ path: `${SCREENSHOTS}trace-tool-call.png`, fullPage: true });
    await page.emulateMedia({ colorScheme: "dark" });
    await page.screenshot({ path: `${SCREENSHOTS}trace-tool-call-dark.png`, fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it("shows a trace only to the tenant of its sessions: another tenant's key gets a 404", async (ctx) => {
    needJaeger(ctx);
    const { traceId } = traceOf("agent.tool_use");
    const path = `/ui/api/traces/${traceId}`;
    const own = await raw(stack!, "GET", path, { key: KEY_A });
    expect(own.status).toBe(200);
    expect((own.json as { session_ids: string[] }).session_ids).toEqual([sessionA]);
    const other = await raw(stack!, "GET", path, { key: KEY_B });
    expect(other.status).toBe(404);
    expect(JSON.stringify(other.json)).not.toContain(sessionA);
    expect((await raw(stack!, "GET", path, { key: null })).status).toBe(401);

    // The page, under tenant B's key, shows nothing of it: in a browser of its own, since on
    // loopback the page keeps tenant A's key for every tab of this one.
    const browserB = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await openPage(browserB, pageErrors);
      await page.goto(`${stack!.gateway.url}/ui/traces/${traceId}`);
      await signInIfAsked(page, KEY_B);
      await page.locator(".notice--error", { hasText: `No trace ${traceId} for this API key.` }).waitFor();
      expect(await page.locator(".span-row").count()).toBe(0);
      expect(await page.locator("main").textContent()).not.toContain(sessionA);
    } finally {
      await browserB.close();
    }
  });

  it("shows nobody a trace naming sessions of two tenants, or none", async (ctx) => {
    needJaeger(ctx);
    const mixed = await withSpan("test.tenant-a-work", { "mh.session_id": sessionA }, () =>
      withSpan("test.tenant-b-work", { "mh.session_id": sessionB }, () => Promise.resolve(currentSpanIds()!.traceId)),
    );
    const none = await withSpan("test.no-session", {}, () => Promise.resolve(currentSpanIds()!.traceId));
    await traceWhen(mixed, (t) => t.spans.length === 2);
    await traceWhen(none, (t) => t.spans.length === 1);
    for (const key of [KEY_A, KEY_B]) {
      expect((await raw(stack!, "GET", `/ui/api/traces/${mixed}`, { key })).status).toBe(404);
      expect((await raw(stack!, "GET", `/ui/api/traces/${none}`, { key })).status).toBe(404);
    }
    // An unknown trace reads the same; a malformed id is a 400 naming it.
    const unknown = await raw(stack!, "GET", `/ui/api/traces/${randomBytes(16).toString("hex")}`, { key: KEY_A });
    expect(unknown.status).toBe(404);
    const bad = await raw(stack!, "GET", "/ui/api/traces/not-a-trace", { key: KEY_A });
    expect(bad.status).toBe(400);
    expect((bad.json as { error: { message: string } }).error.message).toMatch(/^trace_id: /);
  });

  it("says so when Jaeger cannot be reached, or is not configured", async (ctx) => {
    needJaeger(ctx);
    const { traceId } = traceOf("agent.tool_use");
    const closed = await closedPort();
    const gateways: GatewayHandle[] = [];
    try {
      for (const ui of [{ MH_JAEGER_QUERY_URL: `http://127.0.0.1:${closed}` }, {}]) {
        const config = loadConfig({
          MH_HTTP_PORT: "0",
          MH_DATABASE_URL: stack!.db.url,
          ...stack!.brain.log.reach("admin"),
          MH_HARNESS_ADDR: `127.0.0.1:${stack!.brain.harnesses[0]!.port}`,
          MH_HARNESS_TOKEN_FILE: stack!.brain.harnessTokens.tokenFile.admin,
          MH_LOG_LEVEL: "silent",
        });
        gateways.push(await startGateway({ ...config, ui: loadUiConfig(ui) }, createLogger({ service: "gateway", level: "silent" })));
      }
      const [down, off] = await Promise.all(gateways.map((g) => fetch(`${g.url}/ui/api/traces/${traceId}`, { headers: { "x-api-key": KEY_A } })));
      expect(down!.status).toBe(503);
      expect(((await down!.json()) as { error: { message: string } }).error.message).toContain("cannot be reached");
      expect(off!.status).toBe(503);
      expect(((await off!.json()) as { error: { message: string } }).error.message).toContain("without MH_JAEGER_QUERY_URL");
      // Without Jaeger, events still link to Jaeger's UI, as before.
      expect(await (await fetch(`${gateways[1]!.url}/ui/`)).text()).toContain('content="http://127.0.0.1:16686/trace/{trace_id}"');
      expect(await (await fetch(`${stack!.gateway.url}/ui/`)).text()).toContain('content="/ui/traces/{trace_id}?span={span_id}"');
    } finally {
      await Promise.all(gateways.map((g) => g.stop()));
    }
  });
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
