/**
 * `mh dev` as its own process: it prints the gateway URL and the local key, serves the official
 * SDK, refuses a second mh dev on its data directory, stops cleanly on SIGTERM (exit 0), and a
 * restart on the same data directory keeps the key, the sessions and the vaults (PGlite on disk), and
 * the sessions' resources can then be changed. Ports are chosen by the OS (--port 0).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import type { ResourceAddParams } from "@anthropic-ai/sdk/resources/beta/sessions/resources";
import { afterAll, describe, expect, it } from "vitest";
import { mh, type MhProcess } from "./mh.js";

const dirs: string[] = [];
const running: MhProcess[] = [];
afterAll(async () => {
  for (const p of running) if (p.child.exitCode === null) p.child.kill("SIGKILL");
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function startDev(dataDir: string): Promise<{ proc: MhProcess; url: string; key: string; readyMs: number }> {
  const started = Date.now();
  const proc = mh(["dev", "--port", "0", "--data-dir", dataDir]);
  running.push(proc);
  await proc.waitFor(/Ctrl-C stops it\./, 120_000);
  const readyMs = Date.now() - started;
  const url = /URL +(http:\/\/\S+)/.exec(proc.stdout())?.[1] ?? "";
  const key = /API key +(\S+)/.exec(proc.stdout())?.[1] ?? "";
  return { proc, url, key, readyMs };
}

describe("mh dev", () => {
  it("serves the SDK, stops on SIGTERM, and keeps its key and data across restarts", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "mh-dev-it-"));
    dirs.push(dataDir);
    const first = await startDev(dataDir);
    const out = first.proc.stdout();
    expect(out).toMatch(/session log +PGlite in .*mh-dev-it-.*, outbox to the in-process bus/);
    expect(out).toMatch(/sandbox broker +bubblewrap/);
    expect(out).toMatch(/model +the offline model/);
    expect(out).toContain(`new Anthropic({ baseURL: "${first.url}", apiKey: "${first.key}" })`);
    expect(out).toContain(`(kept in ${join(dataDir, "api-key")})`);
    // What an external hand needs, as dev-hand.test.ts runs one.
    expect(out).toMatch(new RegExp(`MH_SANDBOX_BROKER_ADDR=127\\.0\\.0\\.1:\\d+ MH_HAND_TOKEN_FILE=${join(dataDir, "secrets", "hand-broker.token")} npm run kv-device`));
    expect(out).toContain(`token in ${join(dataDir, "secrets", "operator-broker.token")}`);

    const twice = mh(["dev", "--port", "0", "--data-dir", dataDir]);
    expect(await twice.exited).toBe(1);
    expect(twice.stderr()).toMatch(/another mh dev \(pid \d+\) uses/);

    const run = mh(["run", "--url", first.url, "--api-key", first.key, "remember me"]);
    expect(await run.exited, run.stdout() + run.stderr()).toBe(0);
    const sessionId = /^session (sesn_\S+)$/m.exec(run.stdout())?.[1];
    // Vaults are served by the embedded credential vault proxy (PGlite, master key in the data dir).
    const vault = await new Anthropic({ baseURL: first.url, apiKey: first.key, maxRetries: 0 }).beta.vaults.create({ display_name: "kept" });

    first.proc.child.kill("SIGTERM");
    expect(await first.proc.exited).toBe(0);
    expect(first.proc.stdout()).toMatch(/stopped\.\n$/);

    const second = await startDev(dataDir);
    expect(second.key).toBe(first.key);
    const sdk = new Anthropic({ baseURL: second.url, apiKey: second.key, maxRetries: 0 });
    const session = await sdk.beta.sessions.retrieve(sessionId!);
    expect(session.title).toBe("remember me");
    expect(session.status).toBe("idle");
    expect((await sdk.beta.vaults.retrieve(vault.id)).display_name).toBe("kept");

    // Resources on the one PGlite every service shares: the gateway holds no transaction while it
    // calls the credential proxy and the session log, whose queries go to the same database.
    const repo = { type: "github_repository", url: "https://git.example/org/app.git", authorization_token: "tok_dev_0123456789" };
    const added = await sdk.beta.sessions.resources.add(sessionId!, repo as unknown as ResourceAddParams);
    await sdk.beta.sessions.resources.update(added.id, { session_id: sessionId!, authorization_token: "tok_dev_rotated_0123" });
    // Its token's vault is the session's own, not one of the tenant's vaults.
    expect((await sdk.beta.vaults.list()).data.map((v) => v.id)).toEqual([vault.id]);
    expect((await sdk.beta.sessions.resources.list(sessionId!)).data).toEqual([expect.objectContaining({ id: added.id, mount_path: "/workspace/app" })]);
    await sdk.beta.sessions.resources.delete(added.id, { session_id: sessionId! });
    expect((await sdk.beta.sessions.retrieve(sessionId!)).resources).toEqual([]);
    second.proc.child.kill("SIGINT");
    expect(await second.proc.exited).toBe(0);
    process.stdout.write(`mh dev ready: cold ${first.readyMs} ms, warm ${second.readyMs} ms\n`);
  }, 240_000);
});
