/**
 * The local git server with real git on both sides: a bare repository made from files, cloned
 * and pushed to over smart HTTP with the token, refused without it; the pushed commit read back
 * from the server's side.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commitToBare, gitIn, lastCommit } from "./bare-repository.js";
import { gitEnv, sameSecret, startGitHttpServer, type GitHttpServer } from "./http-server.js";

const exec = promisify(execFile);
const TOKEN = "tok_0123456789abcdef";
let root: string;
let server: GitHttpServer;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "mh-git-test-"));
  await commitToBare(join(root, "app.git"), [{ path: "src/a.txt", content: "a\n" }], "first", { identity: { name: "Seed", email: "seed@example.com" } });
  server = await startGitHttpServer({ root, authorize: (_user, password) => sameSecret(password, TOKEN) });
});
afterAll(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

/** Host git as a client, with credentials in the URL (only this test's client does that). */
async function client(args: string[], cwd: string, token = TOKEN): Promise<string> {
  const env = gitEnv({ GIT_TERMINAL_PROMPT: "0", GIT_AUTHOR_NAME: "Dev", GIT_AUTHOR_EMAIL: "dev@example.com", GIT_COMMITTER_NAME: "Dev", GIT_COMMITTER_EMAIL: "dev@example.com" });
  const url = server.url.replace("http://", `http://x-access-token:${token}@`);
  const { stdout } = await exec("git", args.map((a) => a.replace("$REPO", `${url}/app.git`)), { cwd, env });
  return stdout;
}

describe("the local git server", () => {
  it("serves clone and push to the token, and refuses requests without it", async () => {
    const work = await mkdtemp(join(tmpdir(), "mh-git-client-"));
    try {
      await client(["clone", "-q", "$REPO", "."], work);
      await writeFile(join(work, "src/a.txt"), "b\n");
      await client(["commit", "-qam", "change a"], work);
      await client(["push", "-q", "origin", "HEAD"], work);
      expect(await lastCommit(join(root, "app.git"))).toMatch(/Author: Dev <dev@example.com>[\s\S]*change a[\s\S]*src\/a\.txt \| 2 \+-/);
      expect((await gitIn(join(root, "app.git"), "show", "main:src/a.txt"))).toBe("b\n");

      const refused = server.refused;
      await expect(client(["ls-remote", "$REPO"], work, "wrong")).rejects.toThrow(/Authentication failed|401/);
      expect(server.refused).toBeGreaterThan(refused);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  it("adds commits to an existing bare repository", async () => {
    await commitToBare(join(root, "app.git"), [{ path: "NEW.md", content: "new\n" }], "upstream change");
    expect(await gitIn(join(root, "app.git"), "log", "--format=%s", "main")).toMatch(/^upstream change\n/);
  });
});
