/**
 * Repositories of stated sizes for the TTFT sweep, generated once into the machine's cache
 * (MH_CACHE/bench-repos, outside the checkout) and then only linked into a test git server's root:
 * their content is random bytes (git cannot compress it, so the clone moves the stated size), and
 * "200mb" has history, each commit rewriting one of its files. A repository is made in a
 * temporary directory and renamed into place, so an interrupted run leaves no half-made one.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

export interface RepoSpec {
  /** The label printed beside every figure. */
  readonly name: string;
  readonly commits: number;
  /** Files in the tree; each commit after the first rewrites one of them. */
  readonly files: number;
  readonly fileBytes: number;
  /** How it is described in tables. */
  readonly about: string;
}

const MiB = 1024 * 1024;

export const REPOS: readonly RepoSpec[] = [
  { name: "empty", commits: 1, files: 1, fileBytes: 0, about: "one commit of one empty file" },
  { name: "10mb", commits: 1, files: 10, fileBytes: MiB, about: "one commit, 10 files of 1 MiB random bytes" },
  { name: "200mb", commits: 100, files: 10, fileBytes: 2 * MiB, about: "100 commits, each rewriting one of 10 files with 2 MiB random bytes (200 MiB of history, 20 MiB checked out)" },
];

/** Bumped when the generator changes, so a cache made by an older one is not used. */
const FORMAT = 1;
const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  HOME: tmpdir(),
  PATH: process.env["PATH"] ?? "/usr/bin:/bin",
  GIT_AUTHOR_NAME: "Bench",
  GIT_AUTHOR_EMAIL: "bench@example.com",
  GIT_COMMITTER_NAME: "Bench",
  GIT_COMMITTER_EMAIL: "bench@example.com",
};

export function cacheDir(): string {
  const cache = process.env["MH_CACHE"] ?? join(process.env["XDG_CACHE_HOME"] ?? join(homedir(), ".cache"), "metaharness");
  return join(cache, "bench-repos", `v${FORMAT}`);
}

function git(cwd: string, ...args: string[]): void {
  execFileSync("git", args, { cwd, env: GIT_ENV, stdio: "ignore" });
}

/** The bare repository of `spec` in the cache, made first if it is not there; returns its path. */
export async function ensureRepo(spec: RepoSpec): Promise<string> {
  const dir = cacheDir();
  const bare = join(dir, `${spec.name}.git`);
  if (existsSync(bare)) return bare;
  await mkdir(dir, { recursive: true });
  const work = await mkdtemp(join(dir, `.make-${spec.name}-`));
  try {
    const tree = join(work, "tree");
    await mkdir(tree);
    git(tree, "init", "-q", "-b", "main");
    for (let c = 0; c < spec.commits; c++) {
      const which = c === 0 ? Array.from({ length: spec.files }, (_, i) => i) : [c % spec.files];
      for (const i of which) await writeFile(join(tree, `file-${i}.bin`), randomBytes(spec.fileBytes));
      git(tree, "add", "-A");
      git(tree, "commit", "-q", "-m", `commit ${c}`);
    }
    git(work, "clone", "-q", "--bare", tree, "bare.git");
    await rename(join(work, "bare.git"), bare);
    return bare;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Links every repository of `specs` into a git server's root as `bench/<name>.git`. */
export async function serveRepos(root: string, specs: readonly RepoSpec[]): Promise<void> {
  await mkdir(join(root, "bench"), { recursive: true });
  for (const spec of specs) await symlink(await ensureRepo(spec), join(root, "bench", `${spec.name}.git`));
}
