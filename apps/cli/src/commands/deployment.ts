/**
 * The deployment a session command runs against: the one named by --url / MH_URL, or else an
 * embedded stack started in this process for this command alone (in memory, a fresh key, any
 * free port), stopped when the command is done, whatever happened.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { Scenario } from "@metaharness/offline-model";
import { explicitUrl, resolveTarget, sdkClient, type Target, type TargetFlags } from "../client/connect.js";
import type { Output } from "../output.js";
import { newKey } from "../stack/dev-key.js";
import { startStack } from "../stack/embedded.js";
import { duration, style } from "../render/style.js";

export interface DeploymentOptions {
  readonly flags: TargetFlags;
  readonly env: NodeJS.ProcessEnv;
  /** For an embedded stack: the offline model's scenarios, and whether Anthropic's API may be used. */
  readonly scenarios: readonly Scenario[];
  readonly allowRealModel: boolean;
}

export interface Deployment {
  readonly client: Anthropic;
  readonly target: Target;
  /** "embedded" when started for this command. */
  readonly kind: "remote" | "embedded";
}

export async function withDeployment<T>(opts: DeploymentOptions, out: Output, use: (d: Deployment) => Promise<T>): Promise<T> {
  if (explicitUrl(opts.flags, opts.env) !== undefined) {
    const target = await resolveTarget(opts.flags, opts.env);
    return use({ client: sdkClient(target), target, kind: "remote" });
  }
  const realKey = opts.allowRealModel ? opts.env["ANTHROPIC_API_KEY"] : undefined;
  const stack = await startStack({
    apiKey: newKey(),
    port: 0,
    scenarios: opts.scenarios,
    ...(realKey === undefined || realKey === "" ? {} : { anthropicApiKey: realKey }),
  });
  try {
    const s = style(out.color);
    const model = stack.model === "offline" ? "offline model" : "Anthropic's API";
    out.line(s.dim(`embedded stack ready in ${duration(stack.startMs)}: PGlite in memory, in-process bus, bubblewrap sandboxes, ${model}, gateway ${stack.url}`));
    const target = { url: stack.url, apiKey: stack.apiKey };
    return await use({ client: sdkClient(target), target, kind: "embedded" });
  } finally {
    await stack.stop();
  }
}
