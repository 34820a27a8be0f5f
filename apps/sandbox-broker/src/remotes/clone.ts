/**
 * Clones a sandbox's repositories at Provision, from inside the sandbox, through the same path git
 * uses afterwards (`mh::<url>`, agent/git-remote-mh): the clone needs no token in the sandbox, and
 * `origin` comes out wired for fetch, pull and push.
 *
 * A repository that does not clone, or whose branch or commit does not exist, does not fail the
 * sandbox: as in Managed Agents, the session goes on without it, and the failure is reported
 * (ProvisionResponse.repository_failures, and a session.error of type repository_*_error). Its
 * kind comes from git's own words, which never hold a secret: there is none in the sandbox.
 */
import { RepositoryFailureKind, type GitRepository, type RepositoryFailure } from "@metaharness/proto";
import { SANDBOX_ENV, WORKSPACE } from "../inside/view.js";
import type { LocalSandbox } from "../driver/local-sandbox.js";

const GIT = "/usr/bin/git";
const RM = "/usr/bin/rm";
const OUTPUT_CAP = 16 * 1024;

type RunResult = { readonly ok: true } | { readonly ok: false; readonly message: string; readonly timedOut: boolean };

/** Clones each repository in turn; returns those that failed (the others are in the workspace). */
export async function cloneRepositories(
  sandbox: LocalSandbox,
  repositories: readonly GitRepository[],
  timeoutMs: number,
): Promise<RepositoryFailure[]> {
  const failures: RepositoryFailure[] = [];
  for (const repo of repositories) {
    const dir = `${WORKSPACE}/${repo.mountPath}`;
    const cloned = await run(sandbox, [GIT, "clone", "--quiet", "--", `mh::${repo.url}`, dir], timeoutMs, `cloning ${repo.url}`);
    if (!cloned.ok) {
      // Killed at the deadline, git may not have removed what it had fetched: a retry
      // (AddRepositories) would then find the directory taken. A clone that did not time out
      // either never created it or removed it itself (or found it taken, and it is not ours).
      if (cloned.timedOut) await run(sandbox, [RM, "-rf", "--", dir], timeoutMs, `removing ${dir}`);
      failures.push({ url: repo.url, mountPath: repo.mountPath, kind: cloneFailureKind(cloned.message), message: cloned.message });
      continue;
    }
    if (repo.checkout === "") continue;
    const checkedOut = await run(sandbox, [GIT, "-C", dir, "checkout", "--quiet", repo.checkout, "--"], timeoutMs, `checking out ${repo.checkout}`);
    if (!checkedOut.ok) {
      // Without the revision asked for, the repository is not there at all (not on another branch).
      await run(sandbox, [RM, "-rf", "--", dir], timeoutMs, `removing ${dir}`);
      failures.push({
        url: repo.url,
        mountPath: repo.mountPath,
        kind: RepositoryFailureKind.REPOSITORY_FAILURE_KIND_CHECKOUT,
        message: checkedOut.message,
      });
    }
  }
  return failures;
}

/**
 * What git (its smart-HTTP helper, behind the credential proxy) says for each refusal. The proxy
 * turns a host's 401 into a 403 saying "the repository host rejected the credentials"
 * (credential-vault-proxy git-forward.ts), so that git never prompts; git prints it as
 * "remote: ...". A 403 otherwise is "The requested URL returned error: 403", a 404 "repository
 * '...' not found"; a 401 that reached git directly would be "Authentication failed".
 */
export function cloneFailureKind(message: string): RepositoryFailureKind {
  if (/rejected the credentials|Authentication failed|could not read (Username|Password)|returned error: 401/i.test(message)) {
    return RepositoryFailureKind.REPOSITORY_FAILURE_KIND_AUTHENTICATION;
  }
  if (/returned error: 403/i.test(message)) return RepositoryFailureKind.REPOSITORY_FAILURE_KIND_FORBIDDEN;
  if (/repository '[^']*' not found|returned error: 404/i.test(message)) return RepositoryFailureKind.REPOSITORY_FAILURE_KIND_NOT_FOUND;
  return RepositoryFailureKind.REPOSITORY_FAILURE_KIND_CLONE;
}

async function run(sandbox: LocalSandbox, argv: readonly string[], timeoutMs: number, what: string): Promise<RunResult> {
  const result = await sandbox.run({
    timeoutMs,
    capBytes: OUTPUT_CAP,
    graceMs: 100,
    cwd: WORKSPACE,
    argv: [...argv],
    env: [...SANDBOX_ENV, "GIT_TERMINAL_PROMPT=0"],
  });
  if (result.kind === "exited" && result.code === 0 && !result.timedOut) return { ok: true };
  const said = Buffer.concat([result.head, result.tail]).toString("utf8").trim().split("\n").slice(-5).join(" / ");
  const how = result.timedOut ? `timed out after ${timeoutMs} ms` : result.kind === "exited" ? `exit code ${result.code}` : result.error || result.kind;
  return { ok: false, message: `${what} failed (${how})${said === "" ? "" : `: ${said}`}`, timedOut: result.timedOut };
}
