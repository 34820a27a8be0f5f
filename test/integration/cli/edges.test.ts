/**
 * The CLI at its edges, as an audit of a developer's laptop use found them: a reader that closes
 * the pipe early (EPIPE crashed with a stack trace), Ctrl-C while an embedded stack starts (its
 * tokens and master key stayed in /tmp), `--help` after a command and a flag without its value
 * (exit 1, "unknown option"), a URL without its scheme, and text from a session that would drive
 * the terminal (escape sequences printed raw); then a count refused under another flag's name, an
 * empty --port taken as "any port", a web page read as "no sessions yet", a data directory it
 * cannot write in (a bare ENOTDIR), and `mh demo`'s temporary repository left after Ctrl-C.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { startDev, type Stack } from "@metaharness/cli";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../support/eventually.js";
import { MH, mh } from "./mh.js";

let stack: Stack;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "mh-cli-edges-"));
  stack = (await startDev({ host: "127.0.0.1", port: 0, dataDir, memory: true, logLevel: "silent" }, {})).stack;
  env = { MH_URL: stack.url, MH_API_KEY: stack.apiKey };
  const sdk = new Anthropic({ baseURL: stack.url, apiKey: stack.apiKey, maxRetries: 0 });
  const agent = await sdk.beta.agents.create({ name: "edges", model: "claude-sonnet-5-5" });
  const environment = await sdk.beta.environments.create({ name: "edges" });
  for (let i = 0; i < 30; i++) {
    await sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id, title: i === 0 ? "\u001b]0;pwned\u0007 \u001b[2Jtitled" : `s${i}` });
  }
});
afterAll(async () => {
  await stack?.stop();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
});

describe("mh", () => {
  it("stops quietly when the reader closes the pipe", async () => {
    // `mh sessions ls | true`, in a shell: the reader is gone before mh writes its first line.
    const shell = spawn("sh", ["-c", `"${process.execPath}" "${MH}" sessions ls --limit 100 | true`], {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/tmp", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    shell.stderr.setEncoding("utf8").on("data", (t: string) => (stderr += t));
    await new Promise((resolve) => shell.on("exit", resolve));
    expect(stderr).not.toMatch(/EPIPE|Unhandled|node:events/);
  });

  it("leaves no secrets behind when Ctrl-C stops an embedded stack as it starts", { timeout: 90_000 }, async () => {
    // Its stack has written its secrets once the directory exists; stop it before it is ready.
    await expectGoneAfterCtrlC(["run", "hi"], "mh-dev-secrets-");
  });

  it("prints its usage for --help after a command, and exits 2 for a flag without its value", async () => {
    const help = mh(["run", "--help"]);
    expect(await help.exited).toBe(0);
    expect(help.stdout()).toContain("mh run");
    const missing = mh(["sessions", "ls", "--limit"], env);
    expect(await missing.exited).toBe(2);
    expect(missing.stderr()).toContain("mh --help");
  });

  it("asks for an http or https URL", async () => {
    for (const url of ["localhost:8080", "127.0.0.1:8080", "ftp://127.0.0.1"]) {
      const ls = mh(["sessions", "ls", "--url", url, "--api-key", "k"]);
      expect(await ls.exited, url).toBe(2);
      expect(ls.stderr(), url).toContain("is not an http or https URL (e.g. http://127.0.0.1:8080)");
    }
  });

  it("says what to check when no gateway answers", { timeout: 60_000 }, async () => {
    const ls = mh(["sessions", "ls", "--url", "http://127.0.0.1:1", "--api-key", "k"]);
    expect(await ls.exited).toBe(1);
    expect(ls.stderr()).toContain("no gateway answered: is `mh dev` running, or do --url / MH_URL name the right one?");
  });

  it("prints no control characters a session's text holds", async () => {
    const ls = mh(["sessions", "ls", "--limit", "100"], env);
    expect(await ls.exited).toBe(0);
    expect(ls.stdout()).toMatch(/\]0;pwned \[2Jtitled$/m);
    expect(ls.stdout()).not.toMatch(/[\u001b\u0007]/);
  });

  it("names the flag a bad count was given with, and refuses an empty --port", async () => {
    const tail = mh(["sessions", "tail", "sesn_x", "-n", "abc"], env);
    expect(await tail.exited).toBe(2);
    expect(tail.stderr()).toContain('-n/--lines: "abc" is not an integer from 1 to 1000');
    const ls = mh(["sessions", "ls", "--limit", "1e2"], env);
    expect(await ls.exited).toBe(2);
    expect(ls.stderr()).toContain('--limit: "1e2" is not an integer from 1 to 1000');
    const dev = mh(["dev", "--port", ""]);
    expect(await dev.exited).toBe(2);
    expect(dev.stderr()).toContain('--port: "" is not a port');
  });

  it("says so when the URL serves something other than the API", async () => {
    const page = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<html>hello</html>"));
    await new Promise<void>((resolve) => page.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
      const ls = mh(["sessions", "ls", "--url", url, "--api-key", "k"]);
      expect(await ls.exited).toBe(1);
      expect(ls.stderr()).toContain(`${url} answered 200 with text/html, not as the Claude Managed Agents API`);
      expect(ls.stdout()).not.toContain("no sessions yet");
    } finally {
      page.close();
    }
  });

  it("says which data directory it cannot write in", async () => {
    const tmp = await mkdtemp(join(tmpdir(), "mh-cli-dir-"));
    try {
      await writeFile(join(tmp, "a-file"), "");
      const dev = mh(["dev", "--data-dir", join(tmp, "a-file", "dev"), "--port", "0"]);
      expect(await dev.exited).toBe(1);
      expect(dev.stderr()).toContain(`cannot write in the data directory ${join(tmp, "a-file", "dev")} (ENOTDIR)`);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });

  it("removes the demo's temporary repository when Ctrl-C stops it as it starts", { timeout: 90_000 }, async () => {
    await expectGoneAfterCtrlC(["demo"], "mh-demo-git-");
  });
});

/** Runs mh with its own TMPDIR, stops it with SIGINT once a `prefix` directory exists there, and expects that directory gone. */
async function expectGoneAfterCtrlC(args: string[], prefix: string): Promise<void> {
  const tmp = await mkdtemp(join(tmpdir(), "mh-cli-tmp-"));
  const made = async (): Promise<string[]> => (await readdir(tmp)).filter((d) => d.startsWith(prefix));
  try {
    const run = mh(args, { TMPDIR: tmp });
    await eventually(async () => ((await made()).length > 0 ? true : undefined), `a ${prefix} directory in ${tmp}`, 60_000).catch(() => undefined);
    expect(await made()).toHaveLength(1);
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(130);
    expect(await made()).toEqual([]);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
