/**
 * Text the log cannot store is refused naming its field, and text it can store round-trips,
 * found by an audit of the services' bad input: a NUL anywhere in a session's metadata, filters
 * or changes (the database's refusal named no field), a tenant longer than its index takes (was
 * INTERNAL), a change that both puts and removes a repository (the put was dropped), and a lease
 * holder beyond ASCII, whose name in another holder's refusal could not be sent (the call hung
 * until its deadline).
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionMetadata, type DeepPartial } from "@metaharness/proto";
import { newSession, rejection, startTestLog, type TestLog } from "../../support/session-log.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
});
afterAll(async () => {
  await log?.stop();
});

const create = (metadata: DeepPartial<SessionMetadata>) =>
  log.client.createSession({ sessionId: "", metadata: SessionMetadata.fromPartial(metadata) });

describe("text the log cannot store", () => {
  it("is refused with INVALID_ARGUMENT naming the field, and nothing is created", async () => {
    const before = (await log.client.listSessions({ pageSize: 100, pageToken: "", tenant: "", status: 0, labels: {}, orphaned: false })).sessions.length;
    const tool = { name: "pick", description: "", kind: 0, permissionPolicy: 0, mcpServerName: "" };
    const cases: Array<[DeepPartial<SessionMetadata>, string]> = [
      [{ tenant: "t\0" }, "metadata.tenant"],
      [{ title: "a\0b" }, "metadata.title"],
      [{ labels: { team: "x\0" } }, "metadata.labels[team]"],
      [{ labels: { "te\0am": "x" } }, "metadata.labels[te\\0am]"],
      [{ agent: { model: "m", system: "you\0" } }, "metadata.agent.system"],
      [{ agent: { model: "m", tools: [{ ...tool, inputSchema: { properties: { "n\0": { type: "string" } } } }] } }, "metadata.agent.tools[0].input_schema[properties][n\\0]"],
      [{ vaultIds: ["vlt_a", "vlt_\0"] }, "metadata.vault_ids[1]"],
      [{ tenant: "t".repeat(3000) }, "metadata.tenant"],
    ];
    for (const [metadata, field] of cases) {
      const err = await rejection(create(metadata));
      expect([err.code, err.field], field).toEqual(["INVALID_ARGUMENT", field]);
    }
    expect((await log.client.listSessions({ pageSize: 100, pageToken: "", tenant: "", status: 0, labels: {}, orphaned: false })).sessions).toHaveLength(before);
  });

  it("is refused in filters, changes and lease holders too", async () => {
    const sessionId = await newSession(log.client);
    const list = (tenant: string, labels: Record<string, string>) =>
      log.client.listSessions({ pageSize: 10, pageToken: "", tenant, status: 0, labels, orphaned: false });
    expect(await rejection(list("t\0", {}))).toMatchObject({ code: "INVALID_ARGUMENT", field: "tenant" });
    expect(await rejection(list("", { k: "\0" }))).toMatchObject({ code: "INVALID_ARGUMENT", field: "labels[k]" });
    const put = { resourceId: "sesrsc_\0", url: "https://git.example/a.git", mountPath: "a", checkout: "" };
    expect(await rejection(log.client.updateSession({ sessionId, putRepositories: [put], removeRepositories: [], agent: undefined }))).toMatchObject({
      code: "INVALID_ARGUMENT",
      field: "put_repositories[0].resource_id",
    });
    expect(await rejection(log.client.acquireLease({ sessionId, holder: "h\0", ttlMs: 5000 }))).toMatchObject({ code: "INVALID_ARGUMENT", field: "holder" });
  });
});

describe("a change of repositories", () => {
  it("that puts and removes one resource id is refused, and the repository stays", async () => {
    const repo = { resourceId: "sesrsc_a", url: "https://git.example/a.git", mountPath: "a", checkout: "" };
    const { session } = await create({ tenant: "t1", repositories: [repo] });
    const sessionId = session!.sessionId;
    const err = await rejection(log.client.updateSession({ sessionId, putRepositories: [{ ...repo, checkout: "dev" }], removeRepositories: ["sesrsc_a"], agent: undefined }));
    expect(err).toMatchObject({ code: "INVALID_ARGUMENT", field: "remove_repositories[0]" });
    expect((await log.client.getSession({ sessionId })).session?.metadata?.repositories).toEqual([repo]);
  });
});

describe("a lease holder beyond ASCII", () => {
  it("holds the lease, and another holder's refusal names it, at once", async () => {
    const sessionId = await newSession(log.client);
    expect((await log.client.acquireLease({ sessionId, holder: "harness-ü 🦀", ttlMs: 30_000 })).lease?.holder).toBe("harness-ü 🦀");
    const err = await rejection(log.client.acquireLease({ sessionId, holder: "harness-b", ttlMs: 30_000 }, { deadlineMs: 5_000 }));
    expect(err).toMatchObject({ code: "FAILED_PRECONDITION", details: { holder: "harness-ü 🦀" } });
  });
});

describe("bytes that are not protobuf", () => {
  it("are refused by CreateSession, sent raw, and nothing is created", async () => {
    // What the generated decoder skips unread (an unknown field, here holding an 11-byte varint)
    // was accepted, and the session stored; every RPC now refuses it (service-kit's decodingSafely).
    const listed = async () => (await log.client.listSessions({ pageSize: 100, pageToken: "", tenant: "", status: 0, labels: {}, orphaned: false })).sessions;
    const before = (await listed()).length;
    const title = Buffer.from("raw");
    const metadata = Buffer.concat([Buffer.from([0x42, title.length]), title]); // SessionMetadata { title: "raw" } (field 8)
    const overlong = Buffer.from([0x78, ...Array<number>(10).fill(0x80), 0x01]); // field 15 (unknown): an over-long varint
    const send = (request: Buffer) =>
      new Promise<grpc.ServiceError | null>((resolve) => {
        const client = new grpc.Client(log.handle.address, grpc.credentials.createInsecure());
        const headers = new grpc.Metadata();
        headers.set("authorization", `Bearer ${log.tokens.tokens.admin}`);
        const identity = (b: Buffer): Buffer => b;
        client.makeUnaryRequest("/metaharness.v1.SessionLog/CreateSession", identity, identity, request, headers, (err) => {
          client.close();
          resolve(err);
        });
      });
    for (const request of [
      overlong,
      Buffer.concat([Buffer.from([0x12, metadata.length]), metadata, overlong]),
      Buffer.concat([Buffer.from([0x12, metadata.length + overlong.length]), metadata, overlong]),
    ]) {
      const err = await send(request);
      expect(err?.code, request.toString("hex")).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err?.details).toMatch(/^the request could not be decoded: (metadata\.)?field 15: a varint longer than 10 bytes$/);
    }
    expect(await listed()).toHaveLength(before);
    // The same bytes without the over-long varint: a session is created (the test can fail).
    expect(await send(Buffer.concat([Buffer.from([0x12, metadata.length]), metadata]))).toBeNull();
    expect((await listed()).map((s) => s.metadata?.title)).toContain("raw");
  });
});
