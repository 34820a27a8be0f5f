/**
 * `mh demo`: the main job on the embedded default. An agent gets a small project into a real
 * bubblewrap sandbox, runs its tests, sees one fail, reads the code, fixes the bug, runs the
 * tests green, commits, and says what it did: every tool call goes through the sandbox broker,
 * and the session is streamed through the gateway with the official SDK, as `mh run` does.
 * The model is the offline one playing demo/scenario.ts. With --url it runs on that deployment
 * (an `mh dev` knows the scenario).
 */
import { parseArgs } from "node:util";
import { DEFAULT_MODEL, ensureAgent, ensureEnvironment } from "../client/defaults.js";
import { runSession, type Interrupts } from "../client/session-run.js";
import { DEMO_PROMPT, DEMO_SYSTEM, demoScenario } from "../demo/scenario.js";
import { demoWorkspace } from "../demo/workspace.js";
import { exitCodeFor, type ExitCode } from "../exit-codes.js";
import type { Output } from "../output.js";
import { withDeployment } from "./deployment.js";

export const DEMO_AGENT_NAME = "mh-demo";

export async function demo(args: string[], out: Output, interrupts: Interrupts, env: NodeJS.ProcessEnv = process.env): Promise<ExitCode> {
  const { values } = parseArgs({ args, options: { url: { type: "string" }, "api-key": { type: "string" } } });
  const workspace = demoWorkspace();
  const deployment = {
    flags: { url: values.url, apiKey: values["api-key"] },
    // Only --url leaves the embedded default: `npm run demo` must not follow an exported MH_URL.
    env: { ...env, MH_URL: undefined },
    scenarios: [demoScenario(workspace)],
    allowRealModel: false,
  };
  return withDeployment(deployment, out, async ({ client }) => {
    const agentId = await ensureAgent(client, { name: DEMO_AGENT_NAME, model: DEFAULT_MODEL, system: DEMO_SYSTEM });
    const environmentId = await ensureEnvironment(client);
    const result = await runSession(client, { agentId, environmentId, prompt: DEMO_PROMPT, resources: workspace.resources, interrupts }, out);
    return exitCodeFor(result.ending);
  });
}
