/**
 * The demo's repository: the project (project.ts) committed to a bare repository on this machine,
 * served over git smart-HTTP on localhost behind a token made for this run. The session names it
 * as a github_repository resource with that token, which goes to the credential vault proxy and
 * nowhere else; the broker clones it into the sandbox at PROJECT_PATH, and the agent's push lands
 * here, where `mh demo` shows it.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { access, mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { BetaManagedAgentsGitHubRepositoryResourceParams } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { MhError } from "@metaharness/errors";
import { commitToBare, gitIn, lastCommit } from "../git/bare-repository.js";
import { sameSecret, startGitHttpServer } from "../git/http-server.js";
import { PROJECT_FILES, PROJECT_PATH } from "./project.js";

export const DEMO_REPOSITORY = "stats.git";
const IDENTITY = { name: "mh demo", email: "demo@metaharness.invalid" };

export interface DemoRepository {
  /** The repository's URL on the local git server. */
  readonly url: string;
  /** The bare repository on disk. */
  readonly path: string;
  /** The session's resource: the URL, the token, where to clone it. */
  readonly resource: BetaManagedAgentsGitHubRepositoryResourceParams;
  /** Whether main moved since the project was committed (the agent pushed). */
  pushed(): Promise<boolean>;
  /** main's last commit on the server's side, as `git log -1 --stat` shows it. */
  lastCommit(): Promise<string>;
  /** Stops the server; removes the repository unless it was put in a directory of the caller's. */
  close(): Promise<void>;
}

/** `dir`: keep the repository there (`<dir>/stats.git`, which must not exist yet) after the demo. */
export async function serveDemoRepository(dir?: string): Promise<DemoRepository> {
  // A temporary one is made and watched in one synchronous stretch, and removed on exit however
  // the process ends (Ctrl-C while the stack starts exits at once, before any finally runs).
  const root = dir === undefined ? mkdtempSync(join(tmpdir(), "mh-demo-git-")) : resolve(dir);
  // Retries: a git still writing in it as the process exits can add a file while it is removed (ENOTEMPTY).
  const removeNow = (): void => rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
  if (dir === undefined) process.once("exit", removeNow);
  const path = join(root, DEMO_REPOSITORY);
  const cleanup = async (): Promise<void> => {
    if (dir === undefined) {
      process.off("exit", removeNow);
      await rm(root, { recursive: true, force: true });
    }
  };
  try {
    if (await access(path).then(() => true, () => false)) {
      throw new MhError("INVALID_ARGUMENT", `--repo-dir: ${path} exists already; name a directory without a ${DEMO_REPOSITORY}`, { field: "repo-dir" });
    }
    await mkdir(root, { recursive: true });
    await commitToBare(path, PROJECT_FILES, "stats: sum, mean, max", { identity: IDENTITY });
    const first = (await gitIn(path, "rev-parse", "main")).trim();
    const token = `mhdemo_${randomBytes(20).toString("hex")}`;
    const server = await startGitHttpServer({ root, authorize: (_user, password) => sameSecret(password, token) });
    const url = `${server.url}/${DEMO_REPOSITORY}`;
    return {
      url,
      path,
      resource: { type: "github_repository", url, authorization_token: token, mount_path: PROJECT_PATH },
      pushed: async () => (await gitIn(path, "rev-parse", "main")).trim() !== first,
      lastCommit: () => lastCommit(path),
      close: async () => {
        await server.close();
        await cleanup();
      },
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
