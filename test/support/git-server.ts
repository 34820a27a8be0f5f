/**
 * A real git smart-HTTP server for tests: the CLI's local git server (`git http-backend` behind
 * node:http, apps/cli/src/git) demanding HTTP Basic auth with one token, so a request without it
 * is refused (401) and the only way a sandbox's push or pull can succeed is the credential proxy
 * adding it. Bare repositories live in a temp directory; `seed` creates one with a first commit.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { commitToBare, startGitHttpServer } from "@metaharness/cli";

export interface GitServer {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly root: string;
  /** Requests refused for a missing or wrong token. */
  readonly refused: number;
  /** Requests served. */
  readonly served: number;
  /** From now on, only this token is accepted (the old one is refused, as after a revocation). */
  accept(token: string): void;
  /** Creates bare repository `name` ("org/app.git") whose main branch holds `files`. */
  seed(name: string, files: Record<string, string>): Promise<void>;
  /** Runs git with the repository `name` as GIT_DIR (to look at it, or commit to it from the host). */
  git(name: string, ...args: string[]): string;
  /** Commits `files` to main of `name` from the host, as someone else pushing. */
  commit(name: string, files: Record<string, string>, message: string): Promise<void>;
  close(): Promise<void>;
}

const SEED = { name: "Seed", email: "seed@example.com" };
const GIT_ENV = { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", HOME: tmpdir(), PATH: process.env["PATH"] ?? "/usr/bin:/bin" };

export async function startGitServer(opts: { username: string; token: string }): Promise<GitServer> {
  const root = await mkdtemp(join(tmpdir(), "mh-git-server-"));
  let expected = opts.token;
  try {
    const server = await startGitHttpServer({ root, authorize: (user, password) => user === opts.username && password === expected });
    const files = (f: Record<string, string>) => Object.entries(f).map(([path, content]) => ({ path, content }));
    const commit = (name: string, f: Record<string, string>, message: string): Promise<void> => commitToBare(join(root, name), files(f), message, { identity: SEED });
    return {
      url: server.url,
      root,
      get refused() {
        return server.refused;
      },
      get served() {
        return server.served;
      },
      accept(token) {
        expected = token;
      },
      seed: (name, f) => commit(name, f, "first commit"),
      git: (name, ...args) => execFileSync("git", args, { env: { ...GIT_ENV, GIT_DIR: join(root, name) }, encoding: "utf8" }),
      commit,
      close: async () => {
        await server.close();
        await rm(root, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(root, { recursive: true, force: true });
    throw err;
  }
}
