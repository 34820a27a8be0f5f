/**
 * A session's repositories: set at creation, then put and removed by resource id (UpdateSession),
 * which changes nothing else of the metadata; concurrent changes compose; a clash of mount paths,
 * a repeated id or a terminated session is refused, naming the field, and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { AgentConfig, PermissionPolicy, SessionMetadata, ToolKind, type SessionRepository } from "@metaharness/proto";
import { rejection, startTestLog, type TestLog } from "../../support/session-log.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

const repo = (id: string, mountPath = id, url = `https://git.example/org/${id}.git`): SessionRepository => ({
  resourceId: `sesrsc_${id}`,
  url,
  mountPath,
  checkout: "",
});

async function sessionWith(repositories: SessionRepository[]): Promise<string> {
  const metadata = SessionMetadata.fromPartial({ tenant: "t1", title: "kept", vaultIds: ["vlt_a"], repositories });
  const { session } = await log.client.createSession({ sessionId: "", metadata });
  return session!.sessionId;
}

const repositoriesOf = async (sessionId: string): Promise<string[]> =>
  ((await log.client.getSession({ sessionId })).session?.metadata?.repositories ?? []).map((r) => `${r.resourceId}@${r.mountPath}`);

describe("session repositories", () => {
  it("are put and removed by resource id; the rest of the metadata stays as created", async () => {
    const sessionId = await sessionWith([repo("a"), repo("b")]);
    expect(await repositoriesOf(sessionId)).toEqual(["sesrsc_a@a", "sesrsc_b@b"]);

    const { session } = await log.client.updateSession({
      sessionId,
      putRepositories: [repo("c"), { ...repo("a"), checkout: "main" }],
      removeRepositories: ["sesrsc_b", "sesrsc_unknown"],
      agent: undefined,
    });
    expect(session?.metadata?.repositories).toEqual([{ ...repo("a"), checkout: "main" }, repo("c")]);
    expect(session?.metadata).toMatchObject({ tenant: "t1", title: "kept", vaultIds: ["vlt_a"] });
    // Removing again is a no-op.
    await log.client.updateSession({ sessionId, putRepositories: [], removeRepositories: ["sesrsc_b"], agent: undefined });
    expect(await repositoriesOf(sessionId)).toEqual(["sesrsc_a@a", "sesrsc_c@c"]);
  });

  it("compose under concurrent changes", async () => {
    const sessionId = await sessionWith([]);
    const ids = Array.from({ length: 12 }, (_, i) => `r${i}`);
    await Promise.all(ids.map((id) => log.client.updateSession({ sessionId, putRepositories: [repo(id)], removeRepositories: [], agent: undefined })));
    expect((await repositoriesOf(sessionId)).sort()).toEqual(ids.map((id) => `sesrsc_${id}@${id}`).sort());
  });

  it("refuse a mount path in use, repeated ids, and changes to a terminated session", async () => {
    const sessionId = await sessionWith([repo("a", "app")]);
    const clash = await rejection(log.client.updateSession({ sessionId, putRepositories: [repo("b", "app")], removeRepositories: [], agent: undefined }));
    expect(clash).toMatchObject({ code: "INVALID_ARGUMENT", field: "put_repositories[0].mount_path" });
    // Moving a repository onto a path freed in the same change is fine.
    await log.client.updateSession({ sessionId, putRepositories: [repo("b", "app")], removeRepositories: ["sesrsc_a"], agent: undefined });
    expect(await repositoriesOf(sessionId)).toEqual(["sesrsc_b@app"]);

    const twice = await rejection(log.client.updateSession({ sessionId, putRepositories: [repo("c"), repo("c", "other")], removeRepositories: [], agent: undefined }));
    expect(twice).toMatchObject({ code: "INVALID_ARGUMENT", field: "put_repositories[1].resource_id" });
    const empty = await rejection(log.client.updateSession({ sessionId, putRepositories: [{ ...repo("d"), url: "" }], removeRepositories: [], agent: undefined }));
    expect(empty).toMatchObject({ code: "INVALID_ARGUMENT", field: "put_repositories[0].url" });
    // What the sandbox broker would refuse at every Provision of the session is refused here.
    const put = (r: SessionRepository) => rejection(log.client.updateSession({ sessionId, putRepositories: [r], removeRepositories: [], agent: undefined }));
    expect(await put({ ...repo("d"), url: "ftp://git.example/d.git" })).toMatchObject({ code: "INVALID_ARGUMENT", field: "put_repositories[0].url" });
    expect(await put({ ...repo("d"), url: "https://user:pw@git.example/d.git" })).toMatchObject({ field: "put_repositories[0].url" });
    for (const mountPath of ["../d", "/abs/d", "."]) {
      expect(await put(repo("d", mountPath))).toMatchObject({ code: "INVALID_ARGUMENT", field: "put_repositories[0].mount_path" });
    }
    expect(await put({ ...repo("d"), checkout: "--upload-pack=x" })).toMatchObject({ code: "INVALID_ARGUMENT", field: "put_repositories[0].checkout" });
    // "app/" is where "app" is.
    expect(await put(repo("d", "app/"))).toMatchObject({ code: "INVALID_ARGUMENT", field: "put_repositories[0].mount_path" });
    const created = await rejection(
      log.client.createSession({ sessionId: "", metadata: SessionMetadata.fromPartial({ repositories: [repo("x", "p"), repo("y", "p")] }) }),
    );
    expect(created).toMatchObject({ code: "INVALID_ARGUMENT", field: "metadata.repositories[1].mount_path" });
    expect(await repositoriesOf(sessionId)).toEqual(["sesrsc_b@app"]);

    await log.client.emitEvent({ sessionId, event: newEvent("session.status_terminated", {}) });
    const ended = await rejection(log.client.updateSession({ sessionId, putRepositories: [repo("e")], removeRepositories: [], agent: undefined }));
    expect(ended).toMatchObject({ code: "FAILED_PRECONDITION", field: "session_id" });
    const missing = await rejection(log.client.updateSession({ sessionId: "sesn_nope", putRepositories: [], removeRepositories: [], agent: undefined }));
    expect(missing.code).toBe("NOT_FOUND");
  });

  it("refuse enum values this version does not know, and malformed session ids, naming the field", async () => {
    // An unknown number decodes to UNRECOGNIZED (-1), stored as such: an unknown permission
    // policy read back as a default would run a tool without asking.
    const tool = { name: "deploy", kind: ToolKind.TOOL_KIND_CUSTOM, permissionPolicy: PermissionPolicy.PERMISSION_POLICY_ALWAYS_ASK };
    const create = (agent: object, environment?: object) =>
      rejection(log.client.createSession({ sessionId: "", metadata: SessionMetadata.fromPartial({ agent, ...(environment ? { environment } : {}) }) }));
    expect(await create({ tools: [tool, { ...tool, permissionPolicy: 7 }] })).toMatchObject({
      code: "INVALID_ARGUMENT",
      field: "metadata.agent.tools[1].permission_policy",
    });
    expect(await create({ tools: [{ ...tool, kind: 9 }] })).toMatchObject({ code: "INVALID_ARGUMENT", field: "metadata.agent.tools[0].kind" });
    expect(await create({}, { type: 5 })).toMatchObject({ code: "INVALID_ARGUMENT", field: "metadata.environment.type" });
    const sessionId = await sessionWith([]);
    const update = await rejection(
      log.client.updateSession({ sessionId, putRepositories: [], removeRepositories: [], agent: AgentConfig.fromPartial({ tools: [{ ...tool, permissionPolicy: 3 }] }) }),
    );
    expect(update).toMatchObject({ code: "INVALID_ARGUMENT", field: "agent.tools[0].permission_policy" });
    for (const bad of ["sesn_a\u0000b", "nope", "sesn_" + "x".repeat(65)]) {
      expect(await rejection(log.client.getSession({ sessionId: bad }))).toMatchObject({ code: "INVALID_ARGUMENT", field: "session_id" });
    }
  });
});
