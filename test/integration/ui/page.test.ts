/**
 * The session page in headless Chromium, on the whole stack (session log on real Postgres, the
 * offline model, the harness, the gateway): a person enters an API key, sees their tenant's
 * sessions, opens one, and watches it live while the official SDK sends a message: the streamed
 * answer, a tool call with its input and output, the status going idle, each event linking to
 * its trace. A second session, written straight into the log, shows what the offline stack does
 * not produce (sandbox lifecycle, a long failing output, errors). The page's JSON routes keep
 * tenants apart. Screenshots go to __screenshots__/ to be looked at.
 */
import { mkdir } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type Anthropic from "@anthropic-ai/sdk";
import { newEvent } from "@metaharness/events";
import { defineScenario } from "@metaharness/offline-model";
import { EvaluatedPermission, RetryStatus, StopReasonType, type Event } from "@metaharness/proto";
import { startTestTelemetry, type TestTelemetry } from "@metaharness/telemetry/testing";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, KEY_B, raw, startStack, type Stack } from "../../support/gateway.js";
import { launchChromium, newPage as openPage, UI_TIMEOUT_MS } from "./browser.js";

const SCREENSHOTS = fileURLToPath(new URL("./__screenshots__/", import.meta.url));
const DEFAULT_TRACE_TEMPLATE = "http://127.0.0.1:16686/trace/{trace_id}";

const LOG_LINES = [
  "2026-11-29T10:02:11Z deploy api@4f2c1e starting",
  ...Array.from({ length: 30 }, (_, i) => `2026-11-29T10:02:${String(12 + i).padStart(2, "0")}Z migrate: applying 00${String(10 + i)} ok`),
  "2026-11-29T10:02:43Z ERROR migration 0042_add_index failed: relation \"orders\" does not exist",
  "2026-11-29T10:02:43Z deploy api@4f2c1e rolled back",
].join("\n");

const scenarios = [
  defineScenario("ui-live", [
    {
      text: "Let me read the deploy log of the api service first.",
      toolUses: [{ name: "fetch_log", input: { service: "api", since: "10:00", lines: 200 } }],
      ttftMs: 100,
      tokensPerSecond: 40,
    },
    (ctx) => ({
      text: `The deploy failed at migration 0042: ${ctx.lastToolResult?.content.includes("orders") === true ? "the orders table does not exist yet" : "unknown"}. Run migration 0041 first, then deploy again.`,
      ttftMs: 300,
      tokensPerSecond: 15,
    }),
  ]),
];

let telemetry: TestTelemetry;
let stack: Stack;
let browser: Browser;
let context: BrowserContext;
let sdk: Anthropic;
let sessionA: string;
let sessionB: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  // Traced services stamp each event with the trace it was written in: the page links to it.
  telemetry = startTestTelemetry("ui-page-test");
  stack = await startStack({ scenarios });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await mkdir(SCREENSHOTS, { recursive: true });

  sdk = stack.client(KEY_A).sdk;
  const env = await sdk.beta.environments.create({ name: "ui" });
  const agent = await sdk.beta.agents.create({
    name: "deploy-doctor",
    model: "claude-sonnet-4-5",
    system: "[scenario:ui-live]",
    tools: [
      {
        type: "custom",
        name: "fetch_log",
        description: "Reads a service's deploy log",
        input_schema: { type: "object", properties: { service: { type: "string" }, since: { type: "string" }, lines: { type: "integer" } } },
      },
    ],
  });
  sessionA = (await sdk.beta.sessions.create({ agent: agent.id, environment_id: env.id, title: "Why did the api deploy fail?" })).id;

  const sdkB = stack.client(KEY_B).sdk;
  const envB = await sdkB.beta.environments.create({ name: "b" });
  const agentB = await sdkB.beta.agents.create({ name: "b-agent", model: "claude-sonnet-4-5" });
  sessionB = (await sdkB.beta.sessions.create({ agent: agentB.id, environment_id: envB.id, title: "Tenant B private session" })).id;
});

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await stack?.stop();
  await telemetry?.telemetry.shutdown().catch(() => undefined);
});

/** A new tab (so, without a key); `pageErrors` then holds its script errors only. */
const newPage = (): Promise<Page> => openPage(context, pageErrors);

async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Open" }).click();
}

async function logEvents(sessionId: string): Promise<Event[]> {
  const { events } = await stack.brain.log.client.getEvents({ sessionId, position: undefined, limit: 1000, types: [] });
  return events;
}

const traceIdOf = (e: Event | undefined): string | undefined => e?.traceContext?.traceparent.split("-")[1];

describe("the session page", () => {
  it("asks for a key, refuses a wrong one, then lists the key's tenant's sessions only", async () => {
    const page = await newPage();
    await page.goto(`${stack.gateway.url}/ui/`);
    await signIn(page, "mh-not-a-key-of-this-gateway-000");
    await expect.poll(() => page.locator(".form-error").textContent()).toContain("refused");

    await signIn(page, KEY_A);
    const row = page.locator(`tr[data-session-id="${sessionA}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain("Why did the api deploy fail?");
    expect(await row.textContent()).toContain("deploy-doctor");
    expect(await page.locator("tbody").textContent()).not.toContain("Tenant B");
    expect(await page.locator(`tr[data-session-id="${sessionB}"]`).count()).toBe(0);
    await page.close();
  });

  it("follows a session live: streamed text, a tool call with its input and output, idle, trace links", async () => {
    const page = await newPage();
    await page.goto(`${stack.gateway.url}/ui/`);
    // On loopback the key is kept for the browser's other tabs (entry.test.ts); signed in again only if asked.
    if (await page.getByLabel("API key").isVisible()) await signIn(page, KEY_A);
    await page.locator(`tr[data-session-id="${sessionA}"] a.session-link`).click();
    await page.waitForURL(`**/ui/sessions/${sessionA}`);
    await page.locator('.live[data-state="live"]').waitFor();

    // The message is sent while the page watches.
    const sawPreview = page.locator(".ev--preview").first().waitFor({ timeout: UI_TIMEOUT_MS }).then(() => true, () => false);
    await sdk.beta.sessions.events.send(sessionA, { events: [{ type: "user.message", content: [{ type: "text", text: "The api deploy failed. Why?" }] }] });
    await page.locator(".ev--user", { hasText: "The api deploy failed. Why?" }).waitFor();
    await page.locator(".ev--agent:not(.ev--preview)", { hasText: "Let me read the deploy log of the api service first." }).waitFor();

    const tool = page.locator(".tool", { has: page.locator(".tool__name", { hasText: "fetch_log" }) });
    await tool.waitFor();
    expect(await tool.locator(".tool__section").first().textContent()).toContain('"service": "api"');
    await page.locator(".status--idle", { hasText: "waiting for the client (1 tool call)" }).waitFor();
    expect(await tool.getAttribute("data-state")).toBe("pending");

    // The client answers its custom tool; the page shows the output in the call's card.
    const use = (await logEvents(sessionA)).find((e) => e.type === "agent.custom_tool_use");
    expect(use).toBeDefined();
    await sdk.beta.sessions.events.send(sessionA, {
      events: [{ type: "user.custom_tool_result", custom_tool_use_id: use!.id, content: [{ type: "text", text: LOG_LINES }] }],
    });
    await tool.locator(".tool__output", { hasText: "0042_add_index failed" }).waitFor();
    await expect.poll(() => tool.getAttribute("data-state")).toBe("done");
    expect(await tool.locator(".tool__state").textContent()).toMatch(/^done in /);
    // 33 lines show as their start and end (where the error is), with a button to show them all.
    expect(await tool.locator(".excerpt__tail", { hasText: "0042_add_index failed" }).isVisible()).toBe(true);
    expect(await tool.locator(".tool__output button", { hasText: "Show all (33 lines" }).count()).toBe(1);

    const answer = "The deploy failed at migration 0042: the orders table does not exist yet. Run migration 0041 first, then deploy again.";
    await page.locator(".ev--agent:not(.ev--preview)", { hasText: answer }).waitFor();
    await page.locator(".status--idle", { hasText: "end of turn" }).waitFor();
    await expect.poll(() => page.locator(".session-title .badge").textContent()).toBe("idle");
    expect(await sawPreview).toBe(true);
    expect(await page.locator(".ev--preview").count()).toBe(0);

    // Model requests show their usage and duration; the header adds it up.
    const models = page.locator(".ev--model");
    expect(await models.count()).toBe(2);
    expect(await models.first().textContent()).toMatch(/Model request \S+ \d+(\.\d+)? (ms|s) · in [\d.]+k?( \([^)]*\))? · out [\d.]+k? · ≈ \$\d\.\d{4} · stop: tool_use/);
    const final = await sdk.beta.sessions.retrieve(sessionA);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    await expect.poll(() => page.locator(".facts").textContent()).toContain(`out ${final.usage.output_tokens}`);

    // Every event links to the trace it was written in, live ones included.
    const events = await logEvents(sessionA);
    const message = events.filter((e) => e.type === "agent.message").at(-1);
    const traceId = traceIdOf(message);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const link = page.locator(`#ev-${message!.seq} a.trace-link`);
    await link.waitFor();
    expect(await link.getAttribute("href")).toBe(DEFAULT_TRACE_TEMPLATE.replace("{trace_id}", traceId!));
    await expect.poll(() => page.locator("a.trace-link").count()).toBe(events.filter((e) => traceIdOf(e) !== undefined).length);

    // Nothing rendered twice across history, live stream and previews.
    const seqs = await Promise.all((await page.locator(".ev[data-seq]").all()).map(async (row) => Number(await row.getAttribute("data-seq"))));
    expect(new Set(seqs).size).toBe(seqs.length);

    await page.evaluate("window.scrollTo(0, 0)");
    await page.screenshot({ path: `${SCREENSHOTS}session-live.png`, fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it("shows sandbox lifecycle, failing tool output and errors so they read at a glance", async () => {
    const id = (await sdk.beta.sessions.create({ agent: (await sdk.beta.agents.create({ name: "builder", model: "claude-sonnet-4-5" })).id, environment_id: (await sdk.beta.environments.create({ name: "s" })).id, title: "Build and test" })).id;
    const output = [...Array.from({ length: 60 }, (_, i) => `PASS src/module${i}.test.ts`), "FAIL src/orders.test.ts", "  ● orders › totals › rounds to cents", "    Expected: 10.01", "    Received: 10.009999"].join("\n");
    const start = newEvent("span.model_request_start", { model: "claude-sonnet-4-5" });
    const toolUse = newEvent("agent.tool_use", { name: "bash", input: { command: "npm test -- --runInBand", timeout_ms: 120000 }, evaluatedPermission: EvaluatedPermission.EVALUATED_PERMISSION_ALLOW, sandboxId: "" }, { id: "toolu_ui_1" });
    // Written as a harness and the broker would: under the session's lease (so no harness takes
    // the session up meanwhile), in steps, so times and durations differ.
    const steps: Event[][] = [
      [newEvent("session.status_running", {}), start],
      [newEvent("span.model_request_end", { modelRequestStartId: start.id, isError: false, modelUsage: { inputTokens: 1830, outputTokens: 95, cacheCreationInputTokens: 0, cacheReadInputTokens: 1200 }, stopReason: "tool_use" }), toolUse],
      [newEvent("sandbox.provisioned", { sandboxId: "sbx_01UITEST", driver: "bubblewrap", durationMs: 84 })],
      [newEvent("agent.tool_result", { toolUseId: toolUse.id, content: [{ block: { $case: "text", value: { text: output } } }], isError: true })],
      [newEvent("session.error", { error: { type: "model_overloaded_error", message: "The model is overloaded; retrying in 2 s.", retryStatus: RetryStatus.RETRY_STATUS_RETRYING, repositoryUrl: "" } })],
      [newEvent("sandbox.lost", { sandboxId: "sbx_01UITEST", reason: "out of memory (cgroup limit 512 MiB)" })],
      [newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_END_TURN, eventIds: [] } })],
    ];
    const log = stack.brain.log.client;
    const { lease } = await log.acquireLease({ sessionId: id, holder: "ui-page-test", ttlMs: 60_000 });
    for (const events of steps) {
      await log.emitEvents({ sessionId: id, events, expectedSeq: undefined, leaseEpoch: lease!.epoch });
      // A fixed wait on purpose (paces the generator): the page sees the events arrive one step at a time.
      await new Promise((r) => setTimeout(r, 60));
    }
    await log.releaseLease({ sessionId: id, holder: "ui-page-test", epoch: lease!.epoch });

    const page = await newPage();
    await page.goto(`${stack.gateway.url}/ui/sessions/${id}`);
    if (await page.getByLabel("API key").isVisible()) await signIn(page, KEY_A);
    const tool = page.locator(".tool", { has: page.locator(".tool__name", { hasText: "bash" }) });
    await tool.waitFor();
    expect(await tool.locator("pre.code--command").textContent()).toContain("$ npm test -- --runInBand");
    expect(await tool.getAttribute("data-state")).toBe("error");
    expect(await tool.locator(".tool__state").textContent()).toMatch(/^failed in /);
    expect(await tool.locator(".excerpt__tail").textContent()).toContain("Received: 10.009999");
    expect(await tool.locator(".excerpt__head").textContent()).not.toContain("FAIL");
    expect(await page.locator(".sandbox", { hasText: "Sandbox provisioned sbx_01UITEST" }).textContent()).toContain("bubblewrap · 84 ms");
    expect(await page.locator(".sandbox--lost").textContent()).toContain("out of memory");
    expect(await page.locator(".error-box").textContent()).toContain("model_overloaded_error");
    // Every input token the model read, its parts, and the estimate: 1,830 x $3 + 1,200 x $0.30 + 95 x $15 per million.
    expect(await page.locator(".ev--model").textContent()).toMatch(/in 3\.03k \(1\.83k \+ cache read 1\.20k\) · out 95 · ≈ \$0\.0073 · stop: tool_use/);
    expect(await page.locator(".facts").textContent()).toMatch(/Tokensin 3\.03k \(1\.83k \+ cache read 1\.20k\) · out 95Est\. cost≈ \$0\.0073/);

    await page.screenshot({ path: `${SCREENSHOTS}session-sandbox.png`, fullPage: true });
    await page.emulateMedia({ colorScheme: "dark" });
    await page.screenshot({ path: `${SCREENSHOTS}session-sandbox-dark.png`, fullPage: true });
    await page.emulateMedia({ colorScheme: "light" });

    // The whole output on request, and back.
    await tool.getByRole("button", { name: /Show all \(64 lines/ }).click();
    expect(await tool.getByRole("button", { name: "Show less" }).getAttribute("aria-expanded")).toBe("true");
    expect(await tool.locator("pre:not(.excerpt__head):not(.excerpt__tail)", { hasText: "PASS src/module30.test.ts" }).last().isVisible()).toBe(true);
    await tool.getByRole("button", { name: "Show less" }).click();
    expect(await tool.locator(".excerpt__tail").isVisible()).toBe(true);

    // Filters hide a kind of event and bring it back.
    await page.getByLabel("Model requests").uncheck();
    expect(await page.locator(".ev--model").isVisible()).toBe(false);
    await page.getByLabel("Model requests").check();
    expect(await page.locator(".ev--model").isVisible()).toBe(true);


    // Back to the list: every session of the tenant, with its usage and last activity.
    await page.getByRole("link", { name: "← All sessions" }).click();
    await page.locator(`tr[data-session-id="${id}"]`).waitFor();
    expect(await page.locator(`tr[data-session-id="${sessionA}"]`).textContent()).toMatch(/\d+ events/);
    await page.screenshot({ path: `${SCREENSHOTS}list.png`, fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it("keeps tenants apart: another tenant's session is not found, on the page and its JSON routes", async () => {
    // The page's own routes, as the page calls them.
    expect((await raw(stack, "GET", `/ui/api/sessions/${sessionB}/events`, { key: KEY_A })).status).toBe(404);
    const own = await raw(stack, "GET", `/ui/api/sessions/${sessionB}/events`, { key: KEY_B });
    expect(own.status).toBe(200);
    expect((own.json as { data: unknown[] }).data).toEqual([]);
    expect((await raw(stack, "GET", `/ui/api/sessions/${sessionA}/events`, { key: null })).status).toBe(401);
    expect((await raw(stack, "GET", `/ui/api/sessions/${sessionA}/events`, { key: "mh-not-a-key-of-this-gateway-000" })).status).toBe(401);

    const activity = await raw(stack, "GET", `/ui/api/activity?session_id=${sessionA}&session_id=${sessionB}`, { key: KEY_A });
    expect(activity.status).toBe(200);
    expect((activity.json as { data: Array<{ session_id: string }> }).data.map((a) => a.session_id)).toEqual([sessionA]);
    expect((await raw(stack, "GET", `/ui/api/activity?session_id=${sessionA}`, { key: null })).status).toBe(401);

    // The page under tenant A's key, pointed at tenant B's session.
    const page = await newPage();
    await page.goto(`${stack.gateway.url}/ui/sessions/${sessionB}`);
    if (await page.getByLabel("API key").isVisible()) await signIn(page, KEY_A);
    await page.locator(".notice--error", { hasText: `No session ${sessionB} for this API key.` }).waitFor();
    expect(await page.locator("main").textContent()).not.toContain("Tenant B private session");
    await page.close();
  });

  it("serves the page shell without a key, holding no data, under a strict CSP", async () => {
    const res = await fetch(`${stack.gateway.url}/ui/sessions/${sessionA}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(res.headers.get("content-security-policy")).toContain("connect-src 'self'");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await res.text();
    expect(html).toContain('<meta name="mh-trace-url-template" content="http://127.0.0.1:16686/trace/{trace_id}">');
    expect(html).not.toContain("Why did the api deploy fail?");
    const script = await fetch(`${stack.gateway.url}/ui/assets/app.js`);
    expect(script.headers.get("content-type")).toContain("text/javascript");
    expect((await fetch(`${stack.gateway.url}/ui/assets/..%2Fapp.js`)).status).toBe(404);
    expect((await fetch(`${stack.gateway.url}/ui/assets/app.test.js`)).status).toBe(404);
  });
});
