/**
 * Clones a sandbox's repositories at Provision, from inside the sandbox, through the same path git
 * uses afterwards (`mh::<url>`, agent/git-remote-mh): the clone needs no token in the sandbox, and
 * `origin` comes out wired for fetch, pull and push. A failure names the repository and quotes
 * git's own words (which never hold a secret: there is none in the sandbox).
 */
import { MhError } from "@metaharness/errors";
import type { GitRepository } from "@metaharness/proto";
import { SANDBOX_ENV, WORKSPACE } from "../driver/bwrap-args.js";
import type { LocalSandbox } from "../driver/local-sandbox.js";

const GIT = "/usr/bin/git";
const OUTPUT_CAP = 16 * 1024;

export async function cloneRepositories(sandbox: LocalSandbox, repositories: readonly GitRepository[], timeoutMs: number): Promise<void> {
  for (const [i, repo] of repositories.entries()) {
    const field = `resources.repositories[${i}]`;
    const dir = `${WORKSPACE}/${repo.mountPath}`;
    await git(sandbox, ["clone", "--quiet", "--", `mh::${repo.url}`, dir], timeoutMs, field, `cloning ${repo.url}`);
    if (repo.checkout !== "") {
      await git(sandbox, ["-C", dir, "checkout", "--quiet", repo.checkout, "--"], timeoutMs, `${field}.checkout`, `checking out ${repo.checkout}`);
    }
  }
}

async function git(sandbox: LocalSandbox, args: readonly string[], timeoutMs: number, field: string, what: string): Promise<void> {
  const result = await sandbox.run({
    timeoutMs,
    capBytes: OUTPUT_CAP,
    graceMs: 100,
    cwd: WORKSPACE,
    argv: [GIT, ...args],
    env: [...SANDBOX_ENV, "GIT_TERMINAL_PROMPT=0"],
  });
  if (result.kind === "exited" && result.code === 0 && !result.timedOut) return;
  const said = Buffer.concat([result.head, result.tail]).toString("utf8").trim().split("\n").slice(-5).join(" / ");
  const how = result.timedOut ? `timed out after ${timeoutMs} ms` : result.kind === "exited" ? `exit code ${result.code}` : result.error || result.kind;
  throw new MhError("FAILED_PRECONDITION", `${field}: ${what} failed (${how})${said === "" ? "" : `: ${said}`}`, { field });
}
