/**
 * The first ten minutes of a newcomer, as processes: `mh dev` reports each part as it comes up and
 * prints the page; the banner's suggested prompt makes the offline model call a tool in a real
 * sandbox; `mh run` uses the running `mh dev` (saying so, with a link to the session's page); a
 * second tenant's key works on `mh dev`; a taken port and a missing bubblewrap are refused before
 * anything starts, with exit 7; and the CLI's errors are one line each: an unknown session, a
 * refused connection (without the SDK's retries, and without `sessions ls`'s header), `--version`.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { startDev, type Stack } from "@metaharness/cli";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mh } from "./mh.js";

const SECOND_KEY = "mh-second-tenant-key-0123456789";
let stack: Stack;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "mh-first-run-"));
  ({ stack } = await startDev({ host: "127.0.0.1", port: 0, dataDir, memory: true, logLevel: "silent", moreApiKeys: `${SECOND_KEY}:team-b` }, {}));
});
afterAll(async () => {
  await stack?.stop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

/** A port something listens on, for as long as `use` runs. */
async function withTakenPort<T>(use: (port: number) => Promise<T>): Promise<T> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    return await use((server.address() as AddressInfo).port);
  } finally {
    server.close();
  }
}

/** A port nothing listens on (taken from the OS, then given back). */
async function closedPort(): Promise<number> {
  return withTakenPort((port) => Promise.resolve(port));
}

describe("mh run on a running mh dev", () => {
  it("uses it, says so, links the session's page, and the suggested prompt runs a command", { timeout: 90_000 }, async () => {
    const run = mh(["run", "list the files"], { MH_DEV_DIR: dataDir });
    expect(await run.exited, run.stdout() + run.stderr()).toBe(0);
    const out = run.stdout();
    expect(out).toMatch(new RegExp(`^using the running mh dev at ${stack.url} \\(pid ${process.pid}; --url names another deployment\\)$`, "m"));
    expect(out).not.toContain("embedded stack");
    const id = /^session (sesn_\S+)$/m.exec(out)?.[1];
    expect(out).toContain(`page    ${stack.url}/ui/sessions/${id}\n`);
    // The offline model acted on the plain request: a real tool call in a bubblewrap sandbox, then its output as the answer.
    expect(out).toMatch(/^▸ bash {2}ls -la$/m);
    expect(out).toMatch(/^◆ sandbox sbx_\S+ ready \(bubblewrap, /m);
    expect(out).toContain("`ls -la` printed:\n\ntotal ");
    // So the session is the mh dev's, listed there.
    const sdk = new Anthropic({ baseURL: stack.url, apiKey: stack.apiKey, maxRetries: 0 });
    expect((await sdk.beta.sessions.retrieve(id!)).title).toBe("list the files");
  });

  it("serves a second tenant, who sees none of the first one's sessions", async () => {
    const local = new Anthropic({ baseURL: stack.url, apiKey: stack.apiKey, maxRetries: 0 });
    const other = new Anthropic({ baseURL: stack.url, apiKey: SECOND_KEY, maxRetries: 0 });
    const agent = await local.beta.agents.create({ name: "tenant-a", model: "claude-sonnet-5-5" });
    expect((await other.beta.agents.list()).data.map((a) => a.id)).not.toContain(agent.id);
    const theirs = await other.beta.agents.create({ name: "tenant-b", model: "claude-sonnet-5-5" });
    expect((await local.beta.agents.list({ limit: 100 })).data.map((a) => a.id)).not.toContain(theirs.id);
  });
});

describe("mh dev", () => {
  it("prints each part as it comes up, then the page and which model answers", { timeout: 120_000 }, async () => {
    const tmp = await mkdtemp(join(tmpdir(), "mh-first-dev-"));
    const dev = mh(["dev", "--port", "0", "--memory", "--data-dir", tmp]);
    try {
      await dev.waitFor(/Ctrl-C stops it\./, 120_000);
      const out = dev.stdout();
      const parts = ["bubblewrap", "session log", "credential vault proxy", "sandbox broker", "model", "harness", "gateway"];
      for (const part of parts) expect(out).toMatch(new RegExp(`^ {2}${part} +\\S.* \\(\\d[\\d.]* m?s\\)$`, "m"));
      // Line by line as they come: the session log's line arrived before the gateway was up.
      const arrived = (text: string): number => dev.chunks.find((c) => c.text.includes(text))?.at ?? Number.NaN;
      expect(arrived("  session log ")).toBeLessThan(arrived("ready in"));
      const url = /URL +(http:\/\/\S+)/.exec(out)?.[1];
      expect(out).toContain(`  Page     ${url}/ui/`);
      expect(out).toContain("  Model    the offline model, as ANTHROPIC_API_KEY is not set: it acts on plain requests");
      expect(out).toContain('npm run mh -- run "list the files"');
    } finally {
      dev.child.kill("SIGINT");
      await dev.exited;
      await rm(tmp, { recursive: true, force: true });
    }
  });

  it("refuses a port in use before starting anything, with exit 7", async () => {
    await withTakenPort(async (port) => {
      const dev = mh(["dev", "--port", String(port), "--memory", "--data-dir", dataDir]);
      expect(await dev.exited).toBe(7);
      expect(dev.stderr()).toBe(`mh: 127.0.0.1:${port} is in use: pass --port N (0: any free port)\n`);
      expect(dev.stdout()).not.toContain("session log");
    });
  });
});

describe("the first command without bubblewrap", () => {
  it("says what to do and exits 7 before any service starts", async () => {
    const missing = join(dataDir, "no-bwrap", "bwrap");
    const run = mh(["run", "hello"], { MH_BWRAP_PATH: missing, MH_DEV_DIR: join(dataDir, "no-dev-here") });
    expect(await run.exited).toBe(7);
    expect(run.stderr()).toBe(`mh: bubblewrap is not at ${missing} (MH_BWRAP_PATH): install it (sudo apt-get install -y bubblewrap) or point MH_BWRAP_PATH at its bwrap\n`);
    expect(run.stdout()).not.toContain("session log");
  });
});

describe("the CLI's errors", () => {
  const env = (): Record<string, string> => ({ MH_URL: stack.url, MH_API_KEY: stack.apiKey });

  it("says an unknown session in one line", async () => {
    const show = mh(["sessions", "show", "sesn_nothing_here"], env());
    expect(await show.exited).toBe(1);
    expect(show.stderr()).toBe(`mh: no session "sesn_nothing_here" at ${stack.url} (mh sessions ls lists them)\n`);
    expect(show.stdout()).toBe("");
  });

  it("reports a refused connection at once, without a header first", async () => {
    const port = await closedPort();
    const ls = mh(["sessions", "ls", "--url", `http://127.0.0.1:${port}`, "--api-key", "k"]);
    expect(await ls.exited).toBe(1);
    // The middleware's line, not the SDK's "Connection error." after its retries.
    expect(ls.stderr()).toBe(
      `mh: nothing listens at http://127.0.0.1:${port} (connection refused): no gateway answered: is \`mh dev\` running, or do --url / MH_URL name the right one?\n`,
    );
    expect(ls.stdout()).toBe("");
  });

  it("prints its version", async () => {
    const version = mh(["--version"]);
    expect(await version.exited).toBe(0);
    expect(version.stdout()).toMatch(/^mh \d+\.\d+\.\d+\n$/);
  });
});
