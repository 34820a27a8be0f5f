/**
 * Environment packages through the official SDK, end to end, with the real registries: an
 * environment with pip and npm packages and `limited` networking (with the package registries)
 * builds its layer in the sandbox broker, shows the build's progress in its metadata, and a
 * session started while it builds runs the agent's `pip install -r requirements.txt && pytest` of
 * a small real project in its sandbox, pytest and left-pad coming from the layer and the
 * requirement from PyPI through the egress. A build that fails is a named status on the environment
 * and a tool error naming the manager; a manager this machine cannot reach is a 400 naming it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import { defineScenario } from "@metaharness/offline-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

const PROJECT = [
  "mkdir -p proj && cd proj",
  "printf 'tomli-w==1.0.0\\n' > requirements.txt",
  "printf 'import tomli_w\\n\\ndef dump(d):\\n    return tomli_w.dumps(d)\\n' > app.py",
  "printf 'from app import dump\\n\\ndef test_dump():\\n    assert dump({\"a\": 1}) == \"a = 1\\\\n\"\\n' > test_app.py",
  "pip install -q -r requirements.txt 2>&1 | tail -3",
  "pytest -q 2>&1 | tail -1",
  "python3 -c 'import tomli_w; print(tomli_w.__file__)'",
  "node -e \"console.log(require('left-pad')('7', 3, '0'))\"",
].join(" && ");

const scenarios = [
  defineScenario("project", [
    () => ({ toolUses: [{ name: "bash", input: { command: PROJECT, timeout_ms: 300_000 } }] }),
    (ctx) => ({ text: `${ctx.lastToolResult?.isError === true ? "ERROR " : ""}${ctx.lastToolResult?.content.trim() ?? "?"}` }),
  ]),
];

const REGISTRIES = { type: "limited", allow_package_managers: true } as const;
const BUILD_MS = 300_000;

let stack: Stack;
let sdk: Anthropic;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mh-gw-layers-"));
  stack = await startStack({ scenarios, broker: true, brokerEnv: { MH_LAYER_DIR: dir } });
  sdk = stack.client().sdk;
});
afterAll(async () => {
  await stack?.stop();
  await import("node:child_process").then(({ spawnSync }) => spawnSync("sh", ["-c", `for m in ${dir}/mounts/*; do umount -l "$m" 2>/dev/null; done; true`]));
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** The agent's last message in a session of `environmentId`, once the session is idle. */
async function answerIn(environmentId: string): Promise<string> {
  const agent = await sdk.beta.agents.create({ name: "dev", model: "claude-sonnet-5-5", system: "[scenario:project]", tools: [{ type: "agent_toolset_20260401" }] });
  const session = await sdk.beta.sessions.create({
    agent: agent.id,
    environment_id: environmentId,
    initial_events: [{ type: "user.message", content: [{ type: "text", text: "Install the requirements and run the tests." }] }],
  });
  return eventually(
    async () => {
      const all: Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent[] = [];
      for await (const e of sdk.beta.sessions.events.list(session.id)) all.push(e);
      const said = all.filter((e) => e.type === "agent.message").at(-1);
      if (said?.type !== "agent.message" || all.at(-1)?.type !== "session.status_idle") return undefined;
      return said.content.map((c) => (c.type === "text" ? c.text : "")).join("");
    },
    "the agent's answer",
    BUILD_MS,
  );
}

async function statusOf(environmentId: string, wanted: string): Promise<Record<string, string>> {
  return eventually(
    async () => {
      const { metadata } = await sdk.beta.environments.retrieve(environmentId);
      return metadata["metaharness.packages.status"] === wanted ? metadata : undefined;
    },
    `the environment's packages to be ${wanted}`,
    BUILD_MS,
  );
}

describe("environment packages", () => {
  it(
    "builds pip and npm packages into the environment's layer while a session waits at its first tool call; pip install -r requirements.txt && pytest works there",
    async () => {
      const env = await sdk.beta.environments.create({
        name: "python-project",
        config: { type: "cloud", networking: REGISTRIES, packages: { pip: ["pytest==8.3.4"], npm: ["left-pad@1.3.0"] } },
        metadata: { team: "qa" },
      });
      expect(env.config).toMatchObject({ packages: { pip: ["pytest==8.3.4"], npm: ["left-pad@1.3.0"], apt: [] } });
      expect(env.metadata).toMatchObject({ team: "qa", "metaharness.packages.status": "building", "metaharness.packages.layer_id": expect.stringMatching(/^[0-9a-f]{40}$/) as unknown });
      // The session starts at once; its first tool call waits for the layer.
      const said = await answerIn(env.id);
      expect(said).not.toMatch(/^ERROR/);
      expect(said).toMatch(/^1 passed in [\d.]+s\n\/workspace\/\.local\/lib\/python3\.\d+\/site-packages\/tomli_w\/__init__\.py\n007$/m);
      const ready = await statusOf(env.id, "ready");
      expect(Number(ready["metaharness.packages.size_bytes"])).toBeGreaterThan(1_000_000);
      expect(Number(ready["metaharness.packages.build_ms"])).toBeGreaterThan(0);
    },
    BUILD_MS + 60_000,
  );

  it(
    "a failed build is a named status on the environment, and a tool error naming the manager with its output",
    async () => {
      const env = await sdk.beta.environments.create({
        name: "broken",
        config: { type: "cloud", networking: REGISTRIES, packages: { pip: ["mh-no-such-package-b81c2d"] } },
      });
      const failed = await statusOf(env.id, "failed");
      expect(failed["metaharness.packages.failed_manager"]).toBe("pip");
      expect(failed["metaharness.packages.error"]).toContain("No matching distribution found for mh-no-such-package-b81c2d");
      const said = await answerIn(env.id);
      expect(said).toMatch(/^ERROR sandbox error \(FAILED_PRECONDITION\): resources\.packages\.pip: the environment's packages failed to build: pip: exited with code 1/);
      // Updating the environment tries the build again (a registry may have been down).
      const again = await sdk.beta.environments.update(env.id, { config: { type: "cloud", packages: { pip: ["mh-no-such-package-b81c2d"] } } });
      expect(again.metadata["metaharness.packages.status"]).toBe("building");
    },
    BUILD_MS,
  );

  it("refuses, naming the field, a manager this machine cannot reach and a reserved metadata key", async () => {
    const gem = await sdk.beta.environments.create({ name: "ruby", config: { type: "cloud", networking: REGISTRIES, packages: { gem: ["rake"] } } }).catch((e: unknown) => e);
    expect(gem).toBeInstanceOf(Anthropic.BadRequestError);
    expect((gem as InstanceType<typeof Anthropic.APIError>).apiMessage).toMatch(/^config\.packages\.gem: (gem is not installed on this machine|this machine cannot reach gem's registry)/);
    const reserved = await sdk.beta.environments.create({ name: "r", metadata: { "metaharness.packages.status": "ready" } }).catch((e: unknown) => e);
    expect((reserved as InstanceType<typeof Anthropic.APIError>).errorCode).toBe("invalid_metadata");
    const names = (await sdk.beta.environments.list()).data.map((e) => e.name);
    expect(names).not.toContain("ruby");
  });
});
