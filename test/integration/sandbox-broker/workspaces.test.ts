/**
 * Workspace snapshots (apps/sandbox-broker/src/workspaces/): a sandbox whose broker went away comes
 * back under its id with its files, and the model is told; an idle one is paused and resumed
 * without a note; a hundred-fold repeated file is stored once; a corrupt snapshot is named and the
 * one before it restored; a transferred sandbox's workspace follows it to its new session; a
 * workspace over its quota is refused with its size; a store that does not answer is a note after
 * the timeout, never a hang. The same against SeaweedFS's S3 gateway (infra/seaweedfs/up.sh, run
 * here when MH_S3_ENDPOINT is not set).
 */
import { execFileSync } from "node:child_process";
import { createServer, type Server, type Socket } from "node:net";
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxState } from "@metaharness/proto";
import { eventually } from "../../support/eventually.js";
import { provision, run, startTestBroker, type RunningBroker, type TestBroker } from "../../support/sandbox-broker.js";

const MiB = 1024 * 1024;
const dirs: string[] = [];
const brokers: TestBroker[] = [];
afterAll(async () => {
  for (const b of brokers) await b.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function storeDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mh-ws-"));
  dirs.push(dir);
  return dir;
}

async function broker(env: Record<string, string>): Promise<TestBroker> {
  const b = await startTestBroker(env);
  brokers.push(b);
  return b;
}

/** The bytes of every file under `dir`, recursively. */
async function bytesUnder(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) total += (await stat(join(e.parentPath, e.name))).size;
  }
  return total;
}

const WRITE_TREE = [
  "mkdir -p src/deep && printf 'hello' > src/deep/a.txt && head -c 300000 /dev/urandom > blob.bin",
  "ln -s src/deep/a.txt link && printf '#!/bin/sh\\necho ran\\n' > run.sh && chmod 755 run.sh",
].join(" && ");
const CHECK_TREE = "cat link; echo; ./run.sh; md5sum blob.bin | cut -c1-32; stat -c %a run.sh";

describe("workspace snapshots in a local directory", () => {
  let dir: string;
  let b: TestBroker;
  /** The broker's current life (tests restart it). */
  let cur: RunningBroker;
  beforeAll(async () => {
    dir = await storeDir();
    b = await broker({ MH_WORKSPACE_STORE: `dir:${dir}`, MH_REAP_INTERVAL_MS: "100" });
    cur = b;
  });

  it("a sandbox whose broker restarted comes back under its id with its files, and says so", async () => {
    const id = await provision(cur.client, "sesn_ws_restart");
    expect((await run(cur.client, id, "bash", { command: WRITE_TREE })).isError).toBe(false);
    const before = (await run(cur.client, id, "bash", { command: CHECK_TREE })).output;
    await cur.handle.stop();
    const again = (cur = await b.start());
    const after = await run(again.client, id, "bash", { command: CHECK_TREE });
    expect(after.isError).toBe(false);
    expect(after.output).toMatch(new RegExp(`^\\[sandbox ${id} was replaced: it was released \\(broker shut down\\); its workspace was restored from snapshot \\d+`));
    expect(after.output.slice(after.output.indexOf("]\n") + 2)).toBe(before);
    const { sandbox } = await again.client.describeSandbox({ sandboxId: id });
    expect(sandbox?.state).toBe(SandboxState.SANDBOX_STATE_READY);
    // The next call is an ordinary one.
    expect((await run(again.client, id, "bash", { command: "cat src/deep/a.txt" })).output).toBe("hello");
  }, 60_000);

  it("a transferred sandbox's workspace follows it: lost after the transfer, it comes back in the new session with its files", async () => {
    const id = await provision(cur.client, "sesn_ws_giver");
    await run(cur.client, id, "bash", { command: "echo handed > h.txt" });
    await cur.client.transfer({ sandboxId: id, fromSession: "sesn_ws_giver", toSession: "sesn_ws_taker" });
    // No call in the new session before the sandbox is gone: only the transfer saved its files there.
    await cur.handle.stop();
    const again = (cur = await b.start());
    const after = await run(again.client, id, "bash", { command: "cat h.txt" }, { sessionId: "sesn_ws_taker" });
    expect(after.isError).toBe(false);
    expect(after.output).toMatch(/its workspace was restored from snapshot 1, \d+ files\]\nhanded$/);
    expect((await readdir(join(dir, "sessions", "sesn_ws_taker"))).length).toBe(1);
  }, 60_000);

  it("a corrupt snapshot is a tool error naming it, and the one before it is restored", async () => {
    const session = "sesn_ws_corrupt";
    const id = await provision(cur.client, session);
    await run(cur.client, id, "bash", { command: "echo one > f" });
    await run(cur.client, id, "bash", { command: "echo two > f" });
    const snaps = (await readdir(join(dir, "sessions", session))).sort();
    const last = snaps.at(-1)!;
    await writeFile(join(dir, "sessions", session, last), "not gzip");
    await cur.handle.stop();
    const again = (cur = await b.start());
    const first = await run(again.client, id, "bash", { command: "cat f" });
    expect(first.isError).toBe(true);
    expect(first.output).toContain(`snapshot sessions/${session}/${last} is corrupt`);
    expect(first.output).toContain("This call did not run");
    const next = await run(again.client, id, "bash", { command: "cat f" });
    expect(next).toMatchObject({ isError: false, output: "one" });
  }, 60_000);

  it("a workspace over its quota is refused with its size; the call itself goes through", async () => {
    const small = await broker({ MH_WORKSPACE_STORE: `dir:${await storeDir()}`, MH_WORKSPACE_MAX_BYTES: String(1 * MiB) });
    const id = await provision(small.client, "sesn_ws_quota");
    const res = await run(small.client, id, "bash", { command: "head -c 2097152 /dev/zero > big && echo written" });
    expect(res.isError).toBe(false);
    expect(res.output).toBe("written\n[workspace not saved: the workspace holds 2.0 MiB, over its quota of 1.0 MiB (MH_WORKSPACE_MAX_BYTES): not saved]");
  }, 60_000);

  it("an idle sandbox is paused (snapshot, released) and its next call resumes it without a note", async () => {
    const id = await provision(cur.client, "sesn_ws_pause", { idleTimeoutSeconds: 1 });
    await run(cur.client, id, "bash", { command: "echo kept > note.txt" });
    const t0 = Date.now();
    const warm = await run(cur.client, id, "bash", { command: "cat note.txt" });
    const warmMs = Date.now() - t0;
    await eventually(async () => {
      const { sandbox } = await cur.client.describeSandbox({ sandboxId: id });
      return sandbox?.state === SandboxState.SANDBOX_STATE_RELEASED && sandbox.reason.startsWith("paused") ? true : undefined;
    }, "the sandbox is paused", 20_000);
    const t1 = Date.now();
    const resumed = await run(cur.client, id, "bash", { command: "cat note.txt" });
    const resumeMs = Date.now() - t1;
    expect(resumed).toMatchObject({ isError: false, output: warm.output });
    process.stdout.write(`  pause/resume: a call to a running sandbox ${warmMs} ms, to a paused one ${resumeMs} ms (start + restore + call)\n`);
  }, 60_000);

  it("a file written by many sessions is stored once (content-addressed chunks)", async () => {
    const d = await storeDir();
    const deduped = await broker({ MH_WORKSPACE_STORE: `dir:${d}` });
    const SESSIONS = 5;
    for (let i = 0; i < SESSIONS; i++) {
      const id = await provision(deduped.client, `sesn_ws_dedupe_${i}`);
      // The same 6 MiB of content in each (two chunks), made the same way.
      await run(deduped.client, id, "bash", { command: "yes metaharness | head -c 6291456 > repo.dat" });
    }
    // The content's two chunks, and the one listing block (manifest.ts) the five snapshots share.
    const chunks = await bytesUnder(join(d, "chunks"));
    const files = (await readdir(join(d, "chunks"), { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
    expect(files.length).toBe(3);
    expect(chunks - 6291456).toBeGreaterThan(0);
    expect(chunks - 6291456).toBeLessThan(1024);
    expect((await readdir(join(d, "sessions"))).length).toBe(SESSIONS);
  }, 120_000);
});

describe("a workspace store that does not answer", () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    // Accepts connections and never answers: the worst a store can do.
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  });
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        silent.close(() => resolve());
      }),
  );

  it("is a note after its timeout, never a hang; the call's own result is kept", async () => {
    const port = (silent.address() as { port: number }).port;
    const b = await broker({
      MH_WORKSPACE_STORE: "s3://mh-silent",
      MH_WORKSPACE_S3_ENDPOINT: `http://127.0.0.1:${port}`,
      MH_WORKSPACE_S3_ACCESS_KEY_ID: "test",
      MH_WORKSPACE_S3_SECRET_ACCESS_KEY: "test-secret",
      MH_WORKSPACE_STORE_TIMEOUT_MS: "500",
    });
    const id = await provision(b.client, "sesn_ws_down");
    const t0 = Date.now();
    const res = await run(b.client, id, "bash", { command: "echo work > f && echo done" });
    expect(res.isError).toBe(false);
    expect(res.output).toMatch(/^done\n\[workspace not saved: the workspace store s3:\/\/mh-silent\/ at http:\/\/127\.0\.0\.1:\d+ failed: /);
    expect(Date.now() - t0).toBeLessThan(10_000);
    // The session goes on.
    expect((await run(b.client, id, "bash", { command: "cat f" })).output).toMatch(/^work\n/);
  }, 60_000);
});

/** The S3 gateway's address and keys: from infra/up.sh's environment, or its script run now. */
function s3Env(): Record<string, string> {
  let env = process.env;
  if (env["MH_S3_ENDPOINT"] === undefined) {
    const script = fileURLToPath(new URL("../../../infra/seaweedfs/up.sh", import.meta.url));
    const out = execFileSync(script, { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 1_200_000 });
    env = Object.fromEntries(out.trim().split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
  }
  return {
    MH_WORKSPACE_S3_ENDPOINT: env["MH_S3_ENDPOINT"]!,
    MH_WORKSPACE_S3_ACCESS_KEY_ID: env["MH_S3_ACCESS_KEY_ID"]!,
    MH_WORKSPACE_S3_SECRET_ACCESS_KEY: env["MH_S3_SECRET_ACCESS_KEY"]!,
  };
}

describe("workspace snapshots in an S3-compatible store (SeaweedFS)", () => {
  it("a sandbox comes back with its files from the S3 store, after its broker restarted", async () => {
    const bucket = `mh-ws-${Date.now().toString(36)}`;
    const b = await broker({ MH_WORKSPACE_STORE: `s3://${bucket}/snapshots`, ...s3Env() });
    const id = await provision(b.client, "sesn_ws_s3");
    expect((await run(b.client, id, "bash", { command: WRITE_TREE })).output).toBe("");
    const before = (await run(b.client, id, "bash", { command: CHECK_TREE })).output;
    await b.handle.stop();
    const again = await b.start();
    const after = await run(again.client, id, "bash", { command: CHECK_TREE });
    expect(after.output).toMatch(new RegExp(`^\\[sandbox ${id} was replaced: .*its workspace was restored from snapshot \\d+`));
    expect(after.output.slice(after.output.indexOf("]\n") + 2)).toBe(before);
  }, 300_000);
});
