/**
 * The deployment a session command runs against, said in one line: the one named by --url /
 * MH_URL; else, when the command may use it, the `mh dev` running on this machine (found through
 * its data directory, so its sessions show in `mh sessions ls` and on its page); else an embedded
 * stack started in this process for this command alone (in memory, a fresh key, any free port),
 * each part reported as it comes up, stopped when the command is done, whatever happened.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { Scenario } from "@metaharness/offline-model";
import { explicitUrl, resolveTarget, sdkClient, type Target, type TargetFlags } from "../client/connect.js";
import { readBwrapPath } from "../config.js";
import type { Output } from "../output.js";
import { findRunningDev } from "../stack/dev-address.js";
import { newKey, readDevKey } from "../stack/dev-key.js";
import { defaultDataDir, startStack, type StackProgress } from "../stack/embedded.js";
import { duration, style } from "../render/style.js";

export interface DeploymentOptions {
  readonly flags: TargetFlags;
  readonly env: NodeJS.ProcessEnv;
  /** For an embedded stack: the offline model's scenarios, and whether Anthropic's API may be used. */
  readonly scenarios: readonly Scenario[];
  readonly allowRealModel: boolean;
  /** Use a running `mh dev` when no URL is given (mh run), rather than always a stack of its own (mh demo). */
  readonly useRunningDev: boolean;
}

export interface Deployment {
  readonly client: Anthropic;
  readonly target: Target;
  /** "embedded" when started for this command (gone when it ends), "dev" for a running mh dev. */
  readonly kind: "remote" | "dev" | "embedded";
}

export async function withDeployment<T>(opts: DeploymentOptions, out: Output, use: (d: Deployment) => Promise<T>): Promise<T> {
  const s = style(out.color);
  if (explicitUrl(opts.flags, opts.env) !== undefined) {
    const target = await resolveTarget(opts.flags, opts.env);
    out.line(s.dim(`using the deployment at ${target.url} (${opts.flags.url === undefined ? "MH_URL" : "--url"})`));
    return use({ client: sdkClient(target), target, kind: "remote" });
  }
  if (opts.useRunningDev) {
    const dataDir = defaultDataDir(opts.env);
    const apiKey = opts.flags.apiKey ?? (await readDevKey(dataDir));
    const dev = await findRunningDev(dataDir, apiKey);
    if (dev !== undefined && apiKey !== undefined) {
      out.line(s.dim(`using the running mh dev at ${dev.url} (pid ${dev.pid}; --url names another deployment)`));
      const target = { url: dev.url, apiKey };
      return use({ client: sdkClient(target), target, kind: "dev" });
    }
  }
  const realKey = opts.allowRealModel ? opts.env["ANTHROPIC_API_KEY"] : undefined;
  out.line(s.dim(`starting an embedded stack for this command (${opts.useRunningDev ? "no mh dev is running" : "its own"}; --url names a deployment):`));
  const bwrapPath = readBwrapPath(opts.env);
  const stack = await startStack({
    apiKey: newKey(),
    port: 0,
    scenarios: opts.scenarios,
    onProgress: (p) => out.line(s.dim(progressLine(p))),
    ...(bwrapPath === undefined ? {} : { bwrapPath }),
    ...(realKey === undefined || realKey === "" ? {} : { anthropicApiKey: realKey }),
  });
  try {
    const model = stack.model === "offline" ? "offline model" : "Anthropic's API";
    out.line(s.dim(`embedded stack ready in ${duration(stack.startMs)}: PGlite in memory, in-process bus, bubblewrap sandboxes, ${model}, gateway ${stack.url}`));
    const target = { url: stack.url, apiKey: stack.apiKey };
    return await use({ client: sdkClient(target), target, kind: "embedded" });
  } finally {
    await stack.stop();
  }
}

/** One line per part of a starting stack: its name, what it is, how long it took. */
export function progressLine(progress: StackProgress, width = 22): string {
  if (progress.kind === "setup") return `  ${progress.line}`;
  const c = progress.component;
  return `  ${c.name.padEnd(width)}  ${c.detail}${c.startMs > 0 ? `  (${duration(c.startMs)})` : ""}`;
}
