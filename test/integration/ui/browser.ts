/**
 * Headless Chromium for the page tests: Debian's `chromium` (infra/chromium/up.sh installs it),
 * driven by playwright-core. Never a browser of Playwright's own download. The flags keep it from
 * dialling out (this machine's network is closed) and from needing a sandbox as root; Playwright
 * gives every launch a fresh, throw-away profile.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM_PATH = process.env["MH_CHROMIUM_PATH"] ?? "/usr/bin/chromium";

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

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`${CHROMIUM_PATH} is missing: run infra/chromium/up.sh (Debian's chromium package), or set MH_CHROMIUM_PATH`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ARGS, timeout: 30_000 });
}
