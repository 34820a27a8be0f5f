/**
 * Bare repositories on this machine, as a git server keeps them: commit files onto a branch
 * (creating the repository on first use), and read a branch's last commit as `git log -1 --stat`
 * shows it. Git runs without the machine's config (http-server.ts gitEnv) and with an identity of
 * its own, so a signing key or a missing user.name elsewhere cannot break it.
 */
import { execFile } from "node:child_process";
import { access, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { MhError } from "@metaharness/errors";
import { gitEnv } from "./http-server.js";

const exec = promisify(execFile);

export interface Identity {
  readonly name: string;
  readonly email: string;
}

export interface RepositoryFile {
  readonly path: string;
  readonly content: string;
}

async function git(args: readonly string[], opts: { cwd?: string; identity?: Identity } = {}): Promise<string> {
  const who = opts.identity ?? { name: "mh", email: "mh@metaharness.invalid" };
  const env = gitEnv({ GIT_AUTHOR_NAME: who.name, GIT_AUTHOR_EMAIL: who.email, GIT_COMMITTER_NAME: who.name, GIT_COMMITTER_EMAIL: who.email });
  try {
    const { stdout } = await exec("git", args, { env, ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }), maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === "ENOENT") throw new MhError("FAILED_PRECONDITION", "git is not installed (the demo serves its repository with git http-backend): sudo apt-get install git", { cause: err });
    throw new MhError("INTERNAL", `git ${args[0] ?? ""} failed: ${(e.stderr ?? e.message).trim()}`, { cause: err });
  }
}

/** Commits `files` onto `branch` of the bare repository at `bare`, creating it if needed. */
export async function commitToBare(
  bare: string,
  files: readonly RepositoryFile[],
  message: string,
  opts: { branch?: string; identity?: Identity } = {},
): Promise<void> {
  const branch = opts.branch ?? "main";
  const exists = await access(join(bare, "HEAD")).then(() => true, () => false);
  if (!exists) {
    // Made here, and git run inside it: `git init <path>` makes missing parents itself, and a git
    // outliving its caller must not make a folder again that the caller's exit removed.
    await mkdir(bare, { recursive: true });
    await git(["init", "--quiet", "--bare", `--initial-branch=${branch}`], { cwd: bare });
  }
  const work = await mkdtemp(join(tmpdir(), "mh-git-work-"));
  try {
    const inWork = { cwd: work, ...(opts.identity === undefined ? {} : { identity: opts.identity }) };
    await git(["clone", "--quiet", bare, "."], inWork);
    await git(["checkout", "--quiet", "-B", branch], inWork);
    for (const f of files) {
      await mkdir(dirname(join(work, f.path)), { recursive: true });
      await writeFile(join(work, f.path), f.content);
    }
    await git(["add", "--all"], inWork);
    await git(["commit", "--quiet", "-m", message], inWork);
    await git(["push", "--quiet", "origin", branch], inWork);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Runs git on the bare repository (to look at it). */
export function gitIn(bare: string, ...args: string[]): Promise<string> {
  return git(["--git-dir", bare, ...args]);
}

/** A branch's last commit, as `git log -1 --stat` shows it. */
export function lastCommit(bare: string, branch = "main"): Promise<string> {
  return gitIn(bare, "log", "-1", "--stat", "--no-color", "--format=commit %H%nAuthor: %an <%ae>%nDate:   %ad%n%n    %s", branch);
}
