/**
 * Headless Chromium for the page tests: Debian's `chromium` (infra/chromium/up.sh installs it),
 * driven by playwright-core. Never a browser of Playwright's own download. The flags keep it from
 * dialling out (this machine's network is closed) and from needing a sandbox as root; Playwright
 * gives every launch a fresh, throw-away profile.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

export const CHROMIUM_PATH = process.env["MH_CHROMIUM_PATH"] ?? "/usr/bin/chromium";
/** Waits on the page: generous, since the stack and the browser share two cores. */
export const UI_TIMEOUT_MS = 20_000;

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** `extraArgs`: more switches, e.g. `--host-resolver-rules=MAP name 127.0.0.1` to reach this machine by another name. */
export async function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`${CHROMIUM_PATH} is missing: run infra/chromium/up.sh (Debian's chromium package), or set MH_CHROMIUM_PATH`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: [...ARGS, ...extraArgs], timeout: 30_000 });
}

/**
 * A new tab of `context` (so, without a key). `errors` is emptied, then collects the tab's script
 * errors and console errors (a refusal of the page's CSP is one), for a test to expect none.
 */
export async function newPage(context: BrowserContext, errors: string[]): Promise<Page> {
  errors.length = 0;
  const page = await context.newPage();
  page.setDefaultTimeout(UI_TIMEOUT_MS);
  page.on("pageerror", (err) => errors.push(err.message));
  page.on("console", (msg) => {
    if (msg.type() === "error") errors.push(msg.text());
  });
  return page;
}
