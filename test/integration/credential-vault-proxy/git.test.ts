/**
 * Git without the token, against a real `git http-backend` that refuses requests without it: a
 * repository resource is cloned at Provision, and from inside the sandbox (no network, no token)
 * a commit is pushed and another is pulled, through the broker's socket and the proxy, which adds
 * the token. Another repository, or another sandbox's, is refused on that path.
 */
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../support/eventually.js";
import { startGitServer, type GitServer } from "../../support/git-server.js";
import { RepositoryFailureKind } from "@metaharness/proto";
import { provision, provisionResponse, rejection, run, startTestBroker, type TestBroker } from "../../support/sandbox-broker.js";
import { startTestLog, type TestLog } from "../../support/session-log.js";
import { metadataWithVaults, newVault, putGitToken, startTestVault, type TestVault } from "../../support/vault.js";

const TOKEN = "ghs_gittest_4c1d2b3a9e8f7a6b5c4d";
/**
 * How long after a failed clone the broker tries the repository again in the same sandbox: 3 s,
 * so that a call right after the failure is "too soon" even on a busy machine.
 */
const RETRY_MS = 3_000;
/**
 * How long a clone may take: every clone of this file's broker has it. The tests' repositories
 * clone in well under a second on a quiet machine; a busy one spawns git's processes slowly.
 */
const CLONE_TIMEOUT_MS = 15_000;
/** How long a retry holds the call that asked for it. */
const RETRY_WAIT_MS = 1_000;

let log: TestLog;
let vault: TestVault;
let git: GitServer;
let broker: TestBroker;

beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  vault = await startTestVault({ sessionLog: log.reach("proxy") });
  git = await startGitServer({ username: "x-access-token", token: TOKEN });
  await git.seed("org/app.git", { "README.md": "hello from the server\n" });
  await git.seed("org/secret.git", { "SECRET.md": "not for this sandbox\n" });
  broker = await startTestBroker({
    MH_CREDENTIAL_PROXY_ADDR: vault.address,
    MH_CREDENTIAL_PROXY_TOKEN_FILE: vault.tokenFile.broker,
    ...log.reach("broker"),
    MH_REPOSITORY_RETRY_MS: String(RETRY_MS),
    MH_GIT_CLONE_TIMEOUT_MS: String(CLONE_TIMEOUT_MS),
    MH_REPOSITORY_RETRY_WAIT_MS: String(RETRY_WAIT_MS),
  });
});
afterAll(async () => {
  await broker?.stop();
  await git?.close();
  await vault?.stop();
  await log?.stop();
});

/** A session whose vault holds the git token for everything under <server>/org. */
async function session(): Promise<string> {
  const admin = vault.client("admin");
  const vaultId = await newVault(admin);
  await putGitToken(admin, vaultId, `${git.url}/org`, TOKEN);
  const { session: s } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
  return s!.sessionId;
}

const sh = async (sandboxId: string, command: string, sessionId: string) => {
  const res = await run(broker.client, sandboxId, "bash", { command }, { sessionId, timeoutMs: 60_000 });
  return { out: res.output, ok: !res.isError };
};

describe("git repositories", () => {
  it("clone at Provision; push and pull from inside the sandbox without a token", async () => {
    const sessionId = await session();
    const refusedBefore = git.refused;
    const sandboxId = await provision(broker.client, sessionId, { repositories: [{ url: `${git.url}/org/app.git`, mountPath: "app", checkout: "" }] });

    expect((await sh(sandboxId, "cat app/README.md", sessionId)).out).toBe("hello from the server");
    expect((await sh(sandboxId, "git -C app remote get-url origin", sessionId)).out).toBe(`mh::${git.url}/org/app.git`);

    const push = await sh(
      sandboxId,
      "cd /workspace/app && git config user.email agent@example.com && git config user.name Agent && echo 'from the sandbox' > NOTE.md && git add NOTE.md && git commit -qm 'a note' && git push -q origin HEAD:main 2>&1",
      sessionId,
    );
    expect(push).toMatchObject({ ok: true });
    expect(git.git("org/app.git", "log", "-1", "--format=%s", "main").trim()).toBe("a note");
    expect(git.git("org/app.git", "show", "main:NOTE.md")).toBe("from the sandbox\n");

    await git.commit("org/app.git", { "UPSTREAM.md": "pushed by someone else\n" }, "upstream change");
    const pull = await sh(sandboxId, "cd /workspace/app && git pull -q --no-rebase origin main 2>&1 && cat UPSTREAM.md", sessionId);
    expect(pull).toEqual({ ok: true, out: "pushed by someone else" });
    // The server never saw a request without the token from this path.
    expect(git.refused).toBe(refusedBefore);
  });

  it("check out a branch at Provision", async () => {
    const sessionId = await session();
    git.git("org/app.git", "branch", "feature", "main");
    const sandboxId = await provision(broker.client, sessionId, {
      repositories: [{ url: `${git.url}/org/app.git`, mountPath: "work/app", checkout: "feature" }],
    });
    expect((await sh(sandboxId, "git -C work/app rev-parse --abbrev-ref HEAD", sessionId)).out).toBe("feature");
  });

  it("clone repositories added to a running sandbox, once each, only for its own session", async () => {
    const sessionId = await session();
    const sandboxId = await provision(broker.client, sessionId);
    const app = { url: `${git.url}/org/app.git`, mountPath: "later/app", checkout: "" };
    const first = await broker.client.addRepositories({ sandboxId, sessionId, repositories: [app] });
    expect(first).toEqual({ added: [app], repositoryFailures: [] });
    expect((await sh(sandboxId, "git -C later/app log -1 --format=%s", sessionId)).ok).toBe(true);
    // Tried already: skipped, whatever the answer was.
    expect(await broker.client.addRepositories({ sandboxId, sessionId, repositories: [app] })).toEqual({ added: [], repositoryFailures: [] });
    // Two calls at once for a new repository: one clones it, the other waits for that clone, so
    // when either returns the repository is complete.
    const twice = { ...app, mountPath: "twice/app" };
    const one = broker.client.addRepositories({ sandboxId, sessionId, repositories: [twice] });
    const two = await broker.client.addRepositories({ sandboxId, sessionId, repositories: [twice] });
    expect((await sh(sandboxId, "git -C twice/app log -1 --format=%s", sessionId)).ok).toBe(true);
    expect([(await one).added.length, two.added.length].sort()).toEqual([0, 1]);
    const other = await session();
    expect(await rejection(broker.client.addRepositories({ sandboxId, sessionId: other, repositories: [app] }))).toMatchObject({
      code: "NOT_FOUND",
      field: "sandbox_id",
    });
    expect(
      await rejection(broker.client.addRepositories({ sandboxId, sessionId, repositories: [{ ...app, url: "ftp://example.com/x.git" }] })),
    ).toMatchObject({ code: "INVALID_ARGUMENT", field: "repositories[0].url" });
    // As many as a session may have (64), no more.
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ ...app, mountPath: `many/${i}` }));
    expect(await rejection(broker.client.addRepositories({ sandboxId, sessionId, repositories: many(65) }))).toMatchObject({
      code: "INVALID_ARGUMENT",
      field: "repositories",
    });

    // Handed to another session, the sandbox keeps its files but not the previous session's git
    // path: its remotes acted with that session's tokens.
    await broker.client.transfer({ sandboxId, fromSession: sessionId, toSession: other });
    expect((await sh(sandboxId, "git -C later/app fetch -q origin 2>&1", other)).ok).toBe(false);
    expect((await sh(sandboxId, "cat later/app/README.md", other)).out).toBe("hello from the server");
  });

  it("refuse other repositories and other sandboxes' repositories on the git path", async () => {
    const sessionId = await session();
    const a = await provision(broker.client, sessionId, { repositories: [{ url: `${git.url}/org/app.git`, mountPath: "app", checkout: "" }] });
    const other = await session();
    await provision(broker.client, other, { repositories: [{ url: `${git.url}/org/secret.git`, mountPath: "secret", checkout: "" }] });

    const ls = await sh(a, `git ls-remote mh::${git.url}/org/secret.git 2>&1`, sessionId);
    expect(ls.ok).toBe(false);
    expect(ls.out).toMatch(/403/);
    const push = await sh(a, `cd app && git push mh::${git.url}/org/secret.git HEAD:main 2>&1`, sessionId);
    expect(push.ok).toBe(false);
    const direct = await sh(a, `git ls-remote ${git.url}/org/secret.git 2>&1`, sessionId);
    expect(direct.ok).toBe(false);
    const hex = Buffer.from(`${git.url}/org/secret.git`).toString("hex");
    const raw = await sh(a, `curl -s -o /dev/null -w '%{http_code}' --unix-socket /run/metaharness/git.sock 'http://x/${hex}/info/refs?service=git-upload-pack'`, sessionId);
    expect(raw.out).toBe("403");
    expect((await sh(a, "ls /run/metaharness", sessionId)).out).toBe("git.sock");
    expect(git.git("org/secret.git", "log", "--format=%s", "main").trim()).toBe("first commit");
  });

  it("revoke the sandbox's remotes when it is released", async () => {
    const sessionId = await session();
    const sandboxId = await provision(broker.client, sessionId, { repositories: [{ url: `${git.url}/org/app.git`, mountPath: "app", checkout: "" }] });
    const remotes = async (): Promise<number> => {
      const c = new pg.Client({ connectionString: vault.db.url });
      await c.connect();
      try {
        return (await c.query("SELECT 1 FROM remotes WHERE sandbox_id = $1", [sandboxId])).rowCount ?? 0;
      } finally {
        await c.end();
      }
    };
    expect(await remotes()).toBe(1);
    await broker.client.release({ sandboxId, sessionId });
    expect(await remotes()).toBe(0);
  });

  it("serve a session from its own vault, which no other session can use and no listing shows", async () => {
    const admin = vault.client("admin");
    const tenant = "tenant-own";
    const create = async (vaultIds: string[]): Promise<string> =>
      (await log.client.createSession({ sessionId: "", metadata: { ...metadataWithVaults(vaultIds), tenant } })).session!.sessionId;
    const sessionId = await create([]);
    const own = { tenant, displayName: "session", metadata: {}, sessionId };
    const stranger = await rejection(admin.createVault({ ...own, tenant: "tenant-other" }));
    expect(stranger).toMatchObject({ code: "NOT_FOUND", field: "session_id" });
    const { vault: made } = await admin.createVault(own);
    expect(made).toMatchObject({ tenant, sessionId });
    // Asking again returns the same vault: a session has one.
    expect((await admin.createVault(own)).vault?.vaultId).toBe(made!.vaultId);
    await putGitToken(admin, made!.vaultId, `${git.url}/org/app.git`, TOKEN);

    const repositories = [{ url: `${git.url}/org/app.git`, mountPath: "app", checkout: "" }];
    const sandboxId = await provision(broker.client, sessionId, { repositories });
    expect((await sh(sandboxId, "cat app/README.md", sessionId)).out).toBe("hello from the server");

    // Another session of the same tenant naming that vault gets nothing from it: the host refuses
    // the clone, and the sandbox comes up without the repository.
    const thief = await create([made!.vaultId]);
    const stolen = await provisionResponse(broker.client, thief, { repositories });
    expect(stolen.repositoryFailures).toEqual([
      expect.objectContaining({ url: `${git.url}/org/app.git`, kind: RepositoryFailureKind.REPOSITORY_FAILURE_KIND_AUTHENTICATION }),
    ]);
    expect((await sh(stolen.sandbox!.sandboxId, "ls -A", thief)).out).toBe("");
    for (const t of [tenant, ""]) {
      const { vaults } = await admin.listVaults({ tenant: t, pageSize: 500, pageToken: "", includeArchived: true });
      expect(vaults.map((v) => v.vaultId)).not.toContain(made!.vaultId);
    }
    // Archived, it is not made again (asking again said ABORTED "retry", forever).
    await admin.archiveVault({ vaultId: made!.vaultId });
    const again = await rejection(admin.createVault(own));
    expect(again).toMatchObject({ code: "FAILED_PRECONDITION", field: "session_id" });
    expect(again.message).toContain("archived");
  });

  it("provision without the repository, and report it, when the session has no token for it", async () => {
    const { session: s } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([]) });
    const res = await provisionResponse(broker.client, s!.sessionId, {
      repositories: [{ url: `${git.url}/org/app.git`, mountPath: "", checkout: "" }],
    });
    const [failure] = res.repositoryFailures;
    expect(failure).toMatchObject({ url: `${git.url}/org/app.git`, kind: RepositoryFailureKind.REPOSITORY_FAILURE_KIND_AUTHENTICATION });
    expect(failure?.message).toContain("org/app.git");
    expect(failure?.message).toContain("rejected the credentials (HTTP 401)");
    expect(res.sandbox?.sandboxId).toMatch(/^sbx_/);
  });

  it("report a host's compressed 401 in the proxy's own plain words", async () => {
    // Hosts behind a CDN compress their error pages. The proxy replaces the body of a 401, so
    // the host's content-encoding must not come with it, or git cannot read the answer at all.
    const host = createServer((_req, res) => {
      const body = gzipSync("Bad credentials. Use a token: https://docs.example.com/auth\n");
      res.writeHead(401, {
        "content-type": "text/plain",
        "content-encoding": "gzip",
        "content-length": body.length,
        "www-authenticate": 'Basic realm="example"',
      });
      res.end(body);
    });
    await new Promise<void>((resolve) => host.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}/org/app.git`;
      const { session: s } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([]) });
      const res = await provisionResponse(broker.client, s!.sessionId, { repositories: [{ url, mountPath: "", checkout: "" }] });
      const [failure] = res.repositoryFailures;
      expect(failure).toMatchObject({ url, kind: RepositoryFailureKind.REPOSITORY_FAILURE_KIND_AUTHENTICATION });
      expect(failure?.message).toContain("rejected the credentials (HTTP 401)");
    } finally {
      await new Promise((resolve) => host.close(resolve));
    }
  });

  it("try a repository that failed again in the same sandbox, once the retry wait has passed", async () => {
    const admin = vault.client("admin");
    const vaultId = await newVault(admin);
    const { session: s } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
    const sessionId = s!.sessionId;
    const app = { url: `${git.url}/org/app.git`, mountPath: "app", checkout: "" };
    const res = await provisionResponse(broker.client, sessionId, { repositories: [app] });
    const failedAt = Date.now();
    expect(res.repositoryFailures.map((f) => f.kind)).toEqual([RepositoryFailureKind.REPOSITORY_FAILURE_KIND_AUTHENTICATION]);
    const sandboxId = res.sandbox!.sandboxId;

    // Too soon: skipped, reported as nothing new.
    expect(await broker.client.addRepositories({ sandboxId, sessionId, repositories: [app] })).toEqual({ added: [], repositoryFailures: [] });
    // The token arrives in the session's vault; a later call clones the repository.
    await putGitToken(admin, vaultId, `${git.url}/org`, TOKEN);
    const added = await eventually(async () => {
      const { added } = await broker.client.addRepositories({ sandboxId, sessionId, repositories: [app] });
      return added.length > 0 ? added : undefined;
    }, "a call after the retry wait to clone the repository", 10 * RETRY_MS - (Date.now() - failedAt));
    expect(added).toEqual([app]);
    expect(Date.now() - failedAt).toBeGreaterThanOrEqual(RETRY_MS);
    expect((await sh(sandboxId, "cat app/README.md", sessionId)).out).toBe("hello from the server");
  });

  it("clean up after a clone cut off at its deadline; a retry of a hanging host holds a call only so long", async () => {
    // A host in front of the git server that, at first, never answers.
    let hang = true;
    const host = createServer((req, res) => {
      if (hang) return;
      const upstream = request(new URL(req.url ?? "/", git.url), { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => host.listen(0, "127.0.0.1", resolve));
    try {
      const base = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
      const admin = vault.client("admin");
      const vaultId = await newVault(admin);
      await putGitToken(admin, vaultId, `${base}/org`, TOKEN);
      const { session: s } = await log.client.createSession({ sessionId: "", metadata: metadataWithVaults([vaultId]) });
      const sessionId = s!.sessionId;
      const app = { url: `${base}/org/app.git`, mountPath: "slow", checkout: "" };
      const res = await provisionResponse(broker.client, sessionId, { repositories: [app] });
      expect(res.repositoryFailures.map((f) => f.kind)).toEqual([RepositoryFailureKind.REPOSITORY_FAILURE_KIND_CLONE]);
      expect(res.repositoryFailures[0]?.message).toMatch(/timed out/);
      const sandboxId = res.sandbox!.sandboxId;
      expect((await sh(sandboxId, "ls -A", sessionId)).out).toBe("");

      // The retry hangs too: it holds the call RETRY_WAIT_MS, not the clone's deadline, and goes on.
      // A fixed wait on purpose: the retry wait is a time, and waiting it out is what is tested.
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      const t0 = Date.now();
      expect(await broker.client.addRepositories({ sandboxId, sessionId, repositories: [app] })).toEqual({ added: [], repositoryFailures: [] });
      expect(Date.now() - t0).toBeLessThan(CLONE_TIMEOUT_MS - 1_000);

      // The host answers again: once that retry has timed out (and cleaned up) and the doubled
      // wait has passed, a call clones it.
      hang = false;
      const added = await eventually(async () => {
        const { added } = await broker.client.addRepositories({ sandboxId, sessionId, repositories: [app] });
        return added.length > 0 ? added : undefined;
      }, "a call to clone the repository once the host answers", 4 * CLONE_TIMEOUT_MS);
      expect(added).toEqual([app]);
      expect((await sh(sandboxId, "cat slow/README.md", sessionId)).out).toBe("hello from the server");
    } finally {
      host.closeAllConnections();
      await new Promise((resolve) => host.close(resolve));
    }
  }, 180_000);
});
