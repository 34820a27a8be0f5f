/**
 * `mh demo`: the main job on the embedded default. A local git server serves a small project's
 * repository; the session names it (with a token made for this run, which goes to the credential
 * vault proxy and nowhere else); the broker clones it into a real bubblewrap sandbox; the agent
 * runs the tests, sees one fail, reads the code, fixes the bug, runs the tests green, commits and
 * pushes; and the pushed commit is shown from the server's side. Every tool call goes through the
 * sandbox broker, every git request through the proxy, and the session is streamed through the
 * gateway with the official SDK, as `mh run` does. The model is the offline one playing
 * demo/scenario.ts. With --url it runs on that deployment (an `mh dev` knows the scenario), which
 * must reach this machine's 127.0.0.1, where the git server listens.
 */
import { parseArgs } from "node:util";
import { DEFAULT_MODEL, ensureAgent, ensureEnvironment } from "../client/defaults.js";
import { runSession, type Interrupts } from "../client/session-run.js";
import { DEMO_PROMPT, DEMO_SYSTEM, demoScenario } from "../demo/scenario.js";
import { serveDemoRepository, type DemoRepository } from "../demo/repository.js";
import { EXIT, exitCodeFor, type ExitCode } from "../exit-codes.js";
import type { Output } from "../output.js";
import { style } from "../render/style.js";
import { withDeployment } from "./deployment.js";
import { loadModelPrices } from "@metaharness/gateway";

export const DEMO_AGENT_NAME = "mh-demo";

export async function demo(args: string[], out: Output, interrupts: Interrupts, env: NodeJS.ProcessEnv = process.env): Promise<ExitCode> {
  const { values } = parseArgs({ args, options: { url: { type: "string" }, "api-key": { type: "string" }, "repo-dir": { type: "string" } } });
  // A Ctrl-C while the repository is made waits for it (a few git commands): mh leaving at once
  // left those gits running, and one writing into the repository made its temporary folder again
  // after the exit handler had removed it.
  let interrupted = false;
  interrupts.onInterrupt(() => {
    interrupted = true;
  });
  const repository = await serveDemoRepository(values["repo-dir"]).finally(() => interrupts.clear());
  if (interrupted) {
    await repository.close();
    return EXIT.interrupted;
  }
  try {
    const deployment = {
      flags: { url: values.url, apiKey: values["api-key"] },
      // Only --url leaves the embedded default: `npm run demo` must not follow an exported MH_URL.
      env: { ...env, MH_URL: undefined },
      scenarios: [demoScenario()],
      allowRealModel: false,
      // The demo's git server lives in this process, and a run of its own is the proof it works here.
      useRunningDev: false,
    };
    return await withDeployment(deployment, out, async ({ client, kind }) => {
      const agentId = await ensureAgent(client, { name: DEMO_AGENT_NAME, model: DEFAULT_MODEL, system: DEMO_SYSTEM });
      const environmentId = await ensureEnvironment(client);
      const result = await runSession(
        client,
        { agentId, environmentId, prompt: DEMO_PROMPT, resources: [repository.resource], interrupts, pageLasts: kind === "embedded" ? "this run" : "the deployment", prices: loadModelPrices(env) },
        out,
      );
      const code = exitCodeFor(result.ending);
      const pushed = await showPush(repository, out);
      return code === EXIT.ok && !pushed ? EXIT.error : code;
    });
  } finally {
    await repository.close();
  }
}

/** The proof: main on the git server's side. False when nothing was pushed. */
async function showPush(repository: DemoRepository, out: Output): Promise<boolean> {
  const s = style(out.color);
  out.line();
  if (!(await repository.pushed())) {
    out.line(s.red(`── nothing was pushed: main of ${repository.url} is still the project's first commit`));
    return false;
  }
  out.line(s.bold(`── pushed: main of ${repository.url}, on the git server's side (git log -1 --stat)`));
  for (const line of (await repository.lastCommit()).trimEnd().split("\n")) out.line(line === "" ? "" : `  ${line}`);
  return true;
}
