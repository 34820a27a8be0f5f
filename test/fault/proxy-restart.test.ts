/**
 * kill -9 of the credential vault proxy while it carries a session's clone (the git server's
 * answers held back, so the clone is surely under way), then a restart on the same ports and
 * database: the turn completes, the repository is there by its last call (the broker clones again), the
 * token never reached the session's events, and the session is whole. Prints how long the proxy
 * was down and how long the turn was held up.
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScenario } from "@metaharness/offline-model";
import { startFaultStack, type FaultStack } from "../support/fault-stack.js";
import { startGitServer, type GitServer } from "../support/git-server.js";
import { newVault, putGitToken } from "../support/vault.js";
import { recovery, turnEnded, wholeness } from "../support/whole-session.js";

const TOKEN = "ghs_fault_5e6f7a8b9c0d1e2f3a4b";
/** How long the front holds each git request: the clone spans the kill. */
const HOLD_MS = 1_500;

let stack: FaultStack;
let git: GitServer;
let front: Server;
let frontUrl = "";
/** Resolves at the first git request the front receives (the proxy's, for the clone). */
let cloneStarted: () => void = () => undefined;
const started = new Promise<void>((resolve) => (cloneStarted = resolve));

beforeAll(async () => {
  git = await startGitServer({ username: "x-access-token", token: TOKEN });
  await git.seed("org/app.git", { "README.md": "cloned through a restart\n" });
  const upstream = new URL(git.url);
  // The git host as the proxy sees it: the real server behind a delay.
  front = createServer((req, res) => {
    cloneStarted();
    setTimeout(() => {
      const out = request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      out.on("error", () => res.destroy());
      req.pipe(out);
    }, HOLD_MS);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  stack = await startFaultStack({
    harnesses: 1,
    // The first read may find no clone (the one the kill broke is reported as a session.error);
    // the broker clones again on a call made past its retry interval (1 s): the agent reads again,
    // a second apart, up to 8 times, until the file is there.
    scenarios: [
      defineScenario(
        "read",
        [
          (ctx) =>
            ctx.lastToolResult?.isError === false || ctx.toolResults.length >= 8
              ? { text: `read: ${ctx.lastToolResult?.content ?? ""}` }
              : { ttftMs: ctx.toolResults.length === 0 ? 0 : 1_000, toolUses: [{ name: "bash", input: { command: "cat app/README.md" } }] },
        ],
        { onExhausted: "repeat-last" },
      ),
    ],
    env: { "sandbox-broker": { MH_REPOSITORY_RETRY_MS: "1000", MH_REPOSITORY_RETRY_WAIT_MS: "5000" } },
  });
});
afterAll(async () => {
  await stack?.stop();
  front?.closeAllConnections();
  await new Promise((resolve) => front?.close(resolve));
  await git?.close();
});

describe("the credential vault proxy restarted mid-clone", () => {
  it("the turn completes with the repository, no token in the events, the session whole", async () => {
    const vaultId = await newVault(stack.vaultAdmin);
    await putGitToken(stack.vaultAdmin, vaultId, `${frontUrl}/org`, TOKEN);
    const sessionId = await stack.createSession({ vaultIds: [vaultId], repositories: [{ url: `${frontUrl}/org/app.git`, mountPath: "app", checkout: "", resourceId: "sesrsc_fault" }] });
    await stack.send(sessionId, "[scenario:read] read the readme");
    await started;
    const before = new Map([[sessionId, (await stack.events(sessionId)).length]]);
    await stack.proxy.kill("SIGKILL");
    const killedAt = Date.now();
    await stack.proxy.start();
    const down = Date.now() - killedAt;
    const { sessions, nextEventMs } = await recovery(stack, before, killedAt, 60_000, (e) => turnEnded(e));
    const events = sessions.get(sessionId)!;
    const { problems, figures } = await wholeness(sessions, stack.brokerDbUrl);
    const result = events.filter((e) => e.type === "agent.tool_result").at(-1);
    process.stdout.write(
      `  credential vault proxy: down ${down} ms; kill to the session's next event ${nextEventMs[0] ?? "-"} ms; ` +
        `git requests served ${git.served}; ${figures.toolUses} tool uses, ${figures.errors} session.error\n`,
    );
    expect(problems).toEqual([]);
    expect(JSON.stringify(result?.payload)).toContain("cloned through a restart");
    expect(JSON.stringify(events)).not.toContain(TOKEN);
  }, 120_000);
});
