/**
 * `mh run "prompt"`: one prompt as a session on a deployment (the running `mh dev`, or else an
 * embedded stack), streamed to the terminal, with the default agent and environment ensured first. The exit code says how the
 * turn ended (exit-codes.ts).
 */
import { parseArgs } from "node:util";
import { MhError } from "@metaharness/errors";
import { DEFAULT_AGENT_NAME, DEFAULT_MODEL, DEFAULT_SYSTEM, ensureAgent, ensureEnvironment } from "../client/defaults.js";
import { runSession, type Interrupts } from "../client/session-run.js";
import { exitCodeFor, type ExitCode } from "../exit-codes.js";
import type { Output } from "../output.js";
import { withDeployment } from "./deployment.js";
import { demoScenario } from "../demo/scenario.js";
import { loadModelPrices } from "@metaharness/gateway";

export async function run(args: string[], out: Output, interrupts: Interrupts, env: NodeJS.ProcessEnv = process.env): Promise<ExitCode> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      url: { type: "string" },
      "api-key": { type: "string" },
      agent: { type: "string" },
      environment: { type: "string" },
      model: { type: "string" },
      system: { type: "string" },
    },
  });
  const prompt = positionals.join(" ").trim();
  if (prompt === "") throw new MhError("INVALID_ARGUMENT", 'mh run needs a prompt: mh run "fix the failing test"', { field: "prompt" });
  const deployment = {
    flags: { url: values.url, apiKey: values["api-key"] },
    env,
    scenarios: [demoScenario()],
    allowRealModel: true,
    useRunningDev: true,
  };
  return withDeployment(deployment, out, async ({ client, kind }) => {
    const agentId =
      values.agent ??
      (await ensureAgent(client, { name: DEFAULT_AGENT_NAME, model: values.model ?? env["MH_MODEL"] ?? DEFAULT_MODEL, system: values.system ?? DEFAULT_SYSTEM }));
    const environmentId = values.environment ?? (await ensureEnvironment(client));
    const result = await runSession(client, { agentId, environmentId, prompt, interrupts, pageLasts: kind === "embedded" ? "this run" : "the deployment", prices: loadModelPrices(env) }, out);
    return exitCodeFor(result.ending);
  });
}
