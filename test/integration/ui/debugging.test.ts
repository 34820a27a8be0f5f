/**
 * The session page as a debugging tool, in headless Chromium on the whole stack: the list
 * searched and filtered by text, status and agent with the filters kept in the URL; ids on one
 * line with copy buttons; in a session, a jump to the first error, collapse all, the keyboard
 * moving between events, the events downloaded as JSON, a failed command's exit status, and a
 * model request the user interrupted shown as interrupted rather than failed. axe-core finds no WCAG 2.1 A/AA problem on
 * any of these views, light or dark. Screenshots go to __screenshots__/ to be looked at.
 */
import { readFile, mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { newEvent } from "@metaharness/events";
import { EvaluatedPermission, RetryStatus, StopReasonType, type Event } from "@metaharness/proto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, startStack, type Stack } from "../../support/gateway.js";
import { launchChromium, newPage as openPage } from "./browser.js";

const SCREENSHOTS = fileURLToPath(new URL("./__screenshots__/", import.meta.url));
const AXE_SOURCE = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

let stack: Stack;
let browser: Browser;
let context: BrowserContext;
const pageErrors: string[] = [];
const ids: Record<"deploy" | "report" | "empty", string> = { deploy: "", report: "", empty: "" };
let deployEvents = 0;

/** Appends `steps` to a session's log as a harness would: under its lease, each step its own append. */
async function write(sessionId: string, steps: Event[][]): Promise<void> {
  const log = stack.brain.log.client;
  const { lease } = await log.acquireLease({ sessionId, holder: "debugging-test", ttlMs: 60_000 });
  for (const events of steps) await log.emitEvents({ sessionId, events, expectedSeq: undefined, leaseEpoch: lease!.epoch });
  await log.releaseLease({ sessionId, holder: "debugging-test", epoch: lease!.epoch });
}

beforeAll(async () => {
  stack = await startStack({ scenarios: [] });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"]);
  await mkdir(SCREENSHOTS, { recursive: true });

  const sdk = stack.client(KEY_A).sdk;
  const env = await sdk.beta.environments.create({ name: "debugging" });
  const deployer = await sdk.beta.agents.create({ name: "deployer", model: "claude-sonnet-4-5" });
  const reporter = await sdk.beta.agents.create({ name: "reporter", model: "claude-sonnet-4-5" });
  ids.deploy = (await sdk.beta.sessions.create({ agent: deployer.id, environment_id: env.id, title: "Deploy the api" })).id;
  ids.report = (await sdk.beta.sessions.create({ agent: reporter.id, environment_id: env.id, title: "Nightly report" })).id;
  ids.empty = (await sdk.beta.sessions.create({ agent: deployer.id, environment_id: env.id, title: "Rollback drill" })).id;

  const first = newEvent("span.model_request_start", { model: "claude-sonnet-4-5" });
  const use = newEvent("agent.tool_use", { name: "bash", input: { command: "npm run migrate" }, evaluatedPermission: EvaluatedPermission.EVALUATED_PERMISSION_ALLOW, sandboxId: "" });
  const second = newEvent("span.model_request_start", { model: "claude-sonnet-4-5" });
  const usage = { inputTokens: 1200, outputTokens: 80, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 };
  const steps: Event[][] = [
    [newEvent("user.message", { content: [{ block: { $case: "text", value: { text: "Deploy the api and tell me how it went." } } }] }), newEvent("session.status_running", {}), first],
    [newEvent("span.model_request_end", { modelRequestStartId: first.id, isError: false, modelUsage: usage, stopReason: "tool_use" }), use],
    [newEvent("agent.tool_result", { toolUseId: use.id, content: [{ block: { $case: "text", value: { text: "error: relation \"orders\" does not exist" } } }], isError: true, exitCode: 2 })],
    [second],
    [newEvent("user.interrupt", {})],
    [newEvent("span.model_request_end", { modelRequestStartId: second.id, isError: true, modelUsage: undefined, stopReason: "" })],
    [newEvent("session.error", { error: { type: "model_overloaded_error", message: "The model is overloaded.", retryStatus: RetryStatus.RETRY_STATUS_EXHAUSTED, repositoryUrl: "" } })],
    [newEvent("session.status_idle", { stopReason: { type: StopReasonType.STOP_REASON_TYPE_END_TURN, eventIds: [] } })],
  ];
  await write(ids.deploy, steps);
  deployEvents = steps.flat().length;
  await write(ids.report, [[newEvent("session.status_running", {})], [newEvent("session.status_terminated", {})]]);
});

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await stack?.stop();
});

const newPage = (): Promise<Page> => openPage(context, pageErrors);

async function open(path: string): Promise<Page> {
  const page = await newPage();
  await page.goto(`${stack.gateway.url}${path}`);
  await page.locator("#api-key, h1").first().waitFor();
  if ((await page.locator("#api-key").count()) > 0) {
    await page.getByLabel("API key").fill(KEY_A);
    await page.getByRole("button", { name: "Open" }).click();
  }
  return page;
}

/** axe-core's WCAG 2.1 A and AA problems on the page as it is, light and dark. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  const problems: string[] = [];
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    // Evaluated through the debugging protocol, which the page's CSP does not govern.
    await page.evaluate(AXE_SOURCE);
    // A string: this package's types have no DOM.
    const found = await page.evaluate<string[]>(`(async () => {
      const result = await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
      return result.violations.map((v) => v.id + ": " + v.nodes.map((n) => JSON.stringify(n.target)).join(", "));
    })()`);
    problems.push(...found.map((f) => `${scheme}: ${f}`));
  }
  await page.emulateMedia({ colorScheme: "light" });
  return problems;
}

async function visibleRows(page: Page): Promise<string[]> {
  const rows = await page.locator("tbody tr:not([hidden])").all();
  return Promise.all(rows.map(async (r) => (await r.getAttribute("data-session-id")) ?? ""));
}

/** How many lines the text of the element `selector` names takes (1: it did not wrap). */
const lines = (page: Page, selector: string): Promise<number> => page.evaluate<number>(`document.querySelector(${JSON.stringify(selector)}).getClientRects().length`);

describe("the page for debugging", () => {
  it("searches and filters the sessions, keeping the filters in the URL", async () => {
    const page = await open("/ui/");
    await page.locator(`tr[data-session-id="${ids.empty}"]`).waitFor();
    expect((await visibleRows(page)).sort()).toEqual(Object.values(ids).sort());

    await page.getByLabel("Search").fill("nightly");
    await expect.poll(() => visibleRows(page)).toEqual([ids.report]);
    expect(new URL(page.url()).search).toBe("?q=nightly");
    await page.getByLabel("Search").fill("");
    await page.getByLabel("Agent").selectOption("deployer");
    await expect.poll(async () => (await visibleRows(page)).sort()).toEqual([ids.deploy, ids.empty].sort());
    await page.getByLabel("Status").selectOption("terminated");
    await expect.poll(() => visibleRows(page)).toEqual([]);
    await page.getByLabel("Agent").selectOption("");
    await expect.poll(() => visibleRows(page)).toEqual([ids.report]);

    // Reloaded (or sent as a link), the page opens filtered.
    expect(new URL(page.url()).search).toBe("?status=terminated");
    await page.goto(`${stack.gateway.url}/ui/?q=drill&agent=deployer`);
    await page.locator(`tr[data-session-id="${ids.empty}"]`).waitFor();
    await expect.poll(() => visibleRows(page)).toEqual([ids.empty]);
    expect(await page.getByLabel("Search").inputValue()).toBe("drill");
    expect(await page.getByLabel("Agent").inputValue()).toBe("deployer");
    expect(await accessibilityProblems(page)).toEqual([]);

    // Ids stay on one line, and copy.
    const row = page.locator(`tr[data-session-id="${ids.empty}"]`);
    expect(await lines(page, `tr[data-session-id="${ids.empty}"] .id__text`)).toBe(1);
    await row.getByRole("button", { name: `Copy session id ${ids.empty}` }).click();
    expect(await page.evaluate<string>("navigator.clipboard.readText()")).toBe(ids.empty);
    await page.goto(`${stack.gateway.url}/ui/`);
    await page.locator(`tr[data-session-id="${ids.empty}"]`).waitFor();
    await page.screenshot({ path: `${SCREENSHOTS}debugging-list.png`, fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it("jumps to the first error, collapses, moves by keyboard, downloads the events, and tells an interrupt from a failure", async () => {
    const page = await open(`/ui/sessions/${ids.deploy}`);
    await page.locator(".status--idle").waitFor();
    // The session id on one line even in a narrow window, with its copy button.
    await page.setViewportSize({ width: 700, height: 900 });
    expect(await lines(page, ".facts .id__text")).toBe(1);
    await page.setViewportSize({ width: 1280, height: 900 });

    // The interrupted request reads as interrupted, not as a failure.
    const interrupted = page.locator(".ev--interrupted");
    expect(await interrupted.locator(".model__stats strong").textContent()).toBe("interrupted");
    expect(await page.locator(".ev--failed").count()).toBe(0);

    // A failed command says how it ended.
    expect(await page.locator(".tool__state").textContent()).toMatch(/^failed \(exit 2\) in \d+ ms$/);

    await page.getByRole("button", { name: "Jump to first error" }).click();
    const focused = (): Promise<string | null> => page.evaluate<string | null>(`document.activeElement?.getAttribute("data-type") ?? null`);
    expect(await focused()).toBe("agent.tool_use");

    // j / k from the page, arrows, Home and End on an event.
    await page.locator("h1").click();
    await page.keyboard.press("j");
    expect(await focused()).toBe("user.message");
    await page.keyboard.press("j");
    expect(await focused()).toBe("session.status_running");
    await page.keyboard.press("k");
    expect(await focused()).toBe("user.message");
    await page.keyboard.press("End");
    expect(await focused()).toBe("session.status_idle");
    await page.keyboard.press("ArrowUp");
    expect(await focused()).toBe("session.error");

    const input = page.locator(".tool__section").first();
    await page.getByRole("button", { name: "Collapse all" }).click();
    expect(await input.isVisible()).toBe(false);
    await page.screenshot({ path: `${SCREENSHOTS}debugging-collapsed.png`, fullPage: true });
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.getByRole("button", { name: "Expand all" }).click();
    expect(await input.isVisible()).toBe(true);

    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download JSON" }).click()]);
    expect(download.suggestedFilename()).toBe(`${ids.deploy}-events.json`);
    const saved = JSON.parse(await readFile(await download.path(), "utf8")) as { session_id: string; events: Array<{ seq: number; type: string }> };
    expect(saved.session_id).toBe(ids.deploy);
    expect(saved.events.map((e) => e.seq)).toEqual(Array.from({ length: deployEvents }, (_, i) => i + 1));
    expect(saved.events.map((e) => e.type)).toContain("user.interrupt");

    await page.getByRole("button", { name: `Copy session id ${ids.deploy}` }).click();
    expect(await page.evaluate<string>("navigator.clipboard.readText()")).toBe(ids.deploy);
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.screenshot({ path: `${SCREENSHOTS}debugging-session.png`, fullPage: true });
    await page.emulateMedia({ colorScheme: "dark" });
    await page.screenshot({ path: `${SCREENSHOTS}debugging-session-dark.png`, fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it("keeps the trace page's answer without Jaeger accessible too", async () => {
    const page = await open(`/ui/traces/${"ab".repeat(16)}`);
    await page.locator(".notice--error").waitFor();
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.close();
  });
});
