/**
 * An environment's networking is what its sandboxes get: `limited` networking naming a host lets
 * the session's sandbox reach it (through the broker's egress and the credential vault proxy);
 * the default (no hosts) has no network, and neither reaches a host it does not name;
 * `allow_package_managers` reaches the real package registries over HTTPS, and `unrestricted` any
 * public host but no private one. The agent runs curl in a real bubblewrap sandbox; the named
 * host is a test HTTP server, the public ones the registries this machine reaches.
 */
import { createServer, type Server } from "node:http";
import { randomInt } from "node:crypto";
import type Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

// A loopback address of its own (not 127.0.0.1, which the sandbox's NO_PROXY keeps local), on the
// default port: an allowed host without a port means its default port.
const HOST = `127.${randomInt(1, 255)}.${randomInt(1, 255)}.${randomInt(2, 255)}`;

const scenarios = [
  defineScenario("fetch", [
    (ctx) => ({ toolUses: [{ name: "bash", input: { command: `curl -s -m 20 -w ' %{http_code}' http://${ctx.lastUserText.trim()}/hello; echo " exit $?"` } }] }),
    (ctx) => ({ text: ctx.lastToolResult?.content.trim() ?? "?" }),
  ]),
  defineScenario("fetch-https", [
    (ctx) => ({ toolUses: [{ name: "bash", input: { command: `curl -s -m 20 -o /dev/null -w '%{http_code}' https://${ctx.lastUserText.trim()}; echo " exit $?"` } }] }),
    (ctx) => ({ text: ctx.lastToolResult?.content.trim() ?? "?" }),
  ]),
];

let stack: Stack;
let sdk: Anthropic;
let upstream: Server;
let requests = 0;

beforeAll(async () => {
  upstream = createServer((_req, res) => {
    requests += 1;
    res.writeHead(200, { "content-type": "text/plain" }).end("hello from upstream");
  });
  await new Promise<void>((resolve, reject) => {
    upstream.once("error", reject);
    upstream.listen(80, HOST, resolve);
  });
  stack = await startStack({ scenarios, broker: true, vaultEnv: { MH_EGRESS_UPSTREAM_SCHEME: "http" } });
  sdk = stack.client().sdk;
});
afterAll(async () => {
  await stack?.stop();
  await new Promise((resolve) => upstream?.close(resolve));
});

/** What curl said in a session of an environment with `networking`. */
async function fetchIn(networking: Anthropic.Beta.BetaCloudConfigParams["networking"] | undefined, host = HOST, scenario = "fetch"): Promise<string> {
  const environment = await sdk.beta.environments.create({ name: "net", ...(networking === undefined ? {} : { config: { type: "cloud", networking } }) });
  const agent = await sdk.beta.agents.create({ name: "fetcher", model: "claude-sonnet-5-5", system: `[scenario:${scenario}]`, tools: [{ type: "agent_toolset_20260401" }] });
  const session = await sdk.beta.sessions.create({
    agent: agent.id,
    environment_id: environment.id,
    initial_events: [{ type: "user.message", content: [{ type: "text", text: host }] }],
  });
  let all: Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[] = [];
  return eventually(
    async () => {
      all = [];
      for await (const e of sdk.beta.sessions.events.list(session.id)) all.push(e);
      const said = all.filter((e) => e.type === "agent.message").at(-1);
      if (said?.type === "agent.message" && all.at(-1)?.type === "session.status_idle") return said.content.map((c) => (c.type === "text" ? c.text : "")).join("");
      return undefined;
    },
    () => `an answer; events: ${all.map((e) => e.type).join(", ")}`,
    60_000,
  );
}

describe("an environment's networking", () => {
  it("lets a sandbox reach the hosts limited networking names, and nothing else", async () => {
    expect(await fetchIn({ type: "limited", allowed_hosts: [HOST] })).toBe("hello from upstream 200 exit 0");
    expect(requests).toBe(1);
    // Limited to another host: the egress refuses this one.
    expect(await fetchIn({ type: "limited", allowed_hosts: ["api.example.com"] })).toBe(`${HOST} is not an allowed host of this sandbox\n 403 exit 0`);
    expect(requests).toBe(1);
  });

  it("gives the default environment no network at all", async () => {
    const said = await fetchIn(undefined);
    expect(said).toMatch(/^000 exit [1-9]\d*$/);
    expect(requests).toBe(1);
  });

  it("reaches the package registries with allow_package_managers, and public hosts but no private one with unrestricted", async () => {
    const registries = { type: "limited" as const, allow_package_managers: true };
    expect(await fetchIn(registries, "pypi.org/simple/six/", "fetch-https")).toBe("200 exit 0");
    expect(await fetchIn(registries, "example.com/", "fetch-https")).toMatch(/^000 exit [1-9]\d*$/);
    expect(await fetchIn({ type: "unrestricted" }, "registry.npmjs.org/is-number", "fetch-https")).toBe("200 exit 0");
    expect(await fetchIn({ type: "unrestricted" })).toBe(
      `${HOST} is on a private network (loopback, link-local or private address), which unrestricted egress never reaches: it is for public addresses only\n 403 exit 0`,
    );
    expect(requests).toBe(1);
  });
});
