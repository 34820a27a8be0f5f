/**
 * The way into the session page, in headless Chromium on the whole stack: the gateway's root
 * leads to it; on a loopback address the key is asked for once and kept for the browser's other
 * tabs, on any other address only for the tab; the key never shows in a URL or a log line. A
 * trace asked for without Jaeger (not configured, or not answering) is a sentence on the page and
 * at most one warning line in the gateway's log, never a stack trace.
 */
import { loadConfig, loadUiConfig, startGateway, type GatewayHandle } from "@metaharness/gateway";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LogCapture } from "../../support/log-capture.js";
import { unusedPort } from "../../support/process.js";
import { KEY_A, startStack, type Stack } from "../../support/gateway.js";
import { launchChromium, newPage } from "./browser.js";

let stack: Stack;
let browser: Browser;
const logs = new LogCapture();
const pageErrors: string[] = [];

beforeAll(async () => {
  stack = await startStack({ scenarios: [], logger: (service) => logs.logger(service) });
  // mh.test is this machine too, under a name that is not a loopback address.
  browser = await launchChromium(["--host-resolver-rules=MAP mh.test 127.0.0.1"]);
});

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await stack?.stop();
});

describe("the way in", () => {
  it("redirects the gateway's root to the page", async () => {
    const res = await fetch(`${stack.gateway.url}/`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/ui/");
  });

  it("keeps the key for other tabs on loopback, asks again in a new tab elsewhere, and never puts it in a URL or a log", async () => {
    const port = new URL(stack.gateway.url).port;
    for (const [host, remembered] of [["127.0.0.1", true], ["mh.test", false]] as const) {
      const context = await browser.newContext();
      const seen: string[] = [];
      context.on("request", (req) => seen.push(req.url()));
      const first = await newPage(context, pageErrors);
      await first.goto(`http://${host}:${port}/`);
      await first.waitForURL(`http://${host}:${port}/ui/`);
      await first.getByLabel("API key").fill(KEY_A);
      await first.getByRole("button", { name: "Open" }).click();
      await first.getByRole("heading", { name: "Sessions" }).waitFor();

      const second = await newPage(context, pageErrors);
      await second.goto(`http://${host}:${port}/ui/`);
      if (remembered) await second.getByRole("heading", { name: "Sessions" }).waitFor();
      else await second.getByLabel("API key").waitFor();
      expect(await second.getByLabel("API key").count()).toBe(remembered ? 0 : 1);
      expect(seen.filter((url) => url.includes(KEY_A))).toEqual([]);
      expect(pageErrors).toEqual([]);
      await context.close();
    }
    expect(logs.lines.filter((line) => line.includes(KEY_A))).toEqual([]);
  });

  it("says plainly that a trace cannot be shown without Jaeger, with one warning line at most and no stack trace", async () => {
    const closed = await unusedPort(); // nothing listens there
    const gateways: Array<{ handle: GatewayHandle; lines: string[] }> = [];
    try {
      for (const ui of [{ MH_JAEGER_QUERY_URL: `http://127.0.0.1:${closed}` }, {}]) {
        const capture = new LogCapture();
        const config = loadConfig({
          MH_HTTP_PORT: "0",
          MH_DATABASE_URL: stack.db.url,
          ...stack.brain.log.reach("admin"),
          MH_HARNESS_ADDR: `127.0.0.1:${stack.brain.harnesses[0]!.port}`,
          MH_HARNESS_TOKEN_FILE: stack.brain.harnessTokens.tokenFile.admin,
        });
        gateways.push({ handle: await startGateway({ ...config, ui: loadUiConfig(ui) }, capture.logger("gateway")), lines: capture.lines });
      }
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
      for (const [i, { handle, lines }] of gateways.entries()) {
        // What the gateway logs from here on: the start's own lines are not in question.
        const before = lines.length;
        const context = await browser.newContext();
        const page = await newPage(context, pageErrors);
        await page.goto(`${handle.url}/ui/traces/${traceId}`);
        await page.getByLabel("API key").fill(KEY_A);
        await page.getByRole("button", { name: "Open" }).click();
        const said = await page.locator(".notice--error").textContent();
        expect(said).toContain(i === 0 ? "cannot be reached" : "without MH_JAEGER_QUERY_URL");
        // Asked again and again, as a person retrying would.
        for (let n = 0; n < 3; n++) await page.getByRole("button", { name: "Try again" }).click();
        await page.locator(".notice--error").waitFor();
        await context.close();
        const problems = lines.slice(before).map((l) => JSON.parse(l) as { level: string; err?: unknown; msg: string }).filter((l) => l.level !== "info" && l.level !== "debug" && l.level !== "trace");
        expect(problems.filter((l) => l.level !== "warn")).toEqual([]);
        expect(problems.length).toBe(i === 0 ? 1 : 0);
        expect(lines.slice(before).join("\n")).not.toMatch(/"stack"|\n\s+at /);
      }
    } finally {
      await Promise.all(gateways.map((g) => g.handle.stop()));
    }
  });
});
