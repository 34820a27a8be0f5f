/**
 * What the fuzz tests use to send bytes and look at the outcome: a gRPC call of any method with its
 * request as raw bytes (unary, server- or bidi-streaming: one request, then the status), and a
 * fingerprint of everything a service's database holds, to tell whether a refused call stored
 * anything.
 */
import * as grpc from "@grpc/grpc-js";
import type { DescMethod } from "@bufbuild/protobuf";
import pg from "pg";
import { pathOf } from "./contracts.js";

const identity = (b: Buffer): Buffer => b;
/** How long a stream that was not refused is left open before the probe cancels it. */
const STREAM_MS = 300;

/** The status a call of `method` with `request` ends with (CANCELLED: a stream that served and was cancelled). */
export function callRaw(client: grpc.Client, token: string, method: DescMethod, request: Uint8Array): Promise<grpc.StatusObject> {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  const path = pathOf(method);
  const bytes = Buffer.from(request);
  const options = { deadline: Date.now() + 10_000 };
  return new Promise((resolve) => {
    if (method.methodKind === "unary") {
      const call = client.makeUnaryRequest(path, identity, identity, bytes, metadata, options, () => undefined);
      call.on("status", resolve);
      return;
    }
    const call =
      method.methodKind === "server_streaming"
        ? client.makeServerStreamRequest(path, identity, identity, bytes, metadata, options)
        : client.makeBidiStreamRequest(path, identity, identity, metadata, options);
    if (method.methodKind !== "server_streaming") {
      const duplex = call as grpc.ClientDuplexStream<Buffer, Buffer>;
      duplex.write(bytes);
      duplex.end();
    }
    call.on("data", () => undefined);
    call.on("error", () => undefined);
    const timer = setTimeout(() => call.cancel(), STREAM_MS);
    call.on("status", (status: grpc.StatusObject) => {
      clearTimeout(timer);
      resolve(status);
    });
  });
}

/** A digest of every row of every table of the database at `url` (but the migrations'), in one query. */
export async function fingerprinter(url: string): Promise<{ take(): Promise<string>; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ name: string }>(
    `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
      WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema') AND table_name <> 'mh_schema_migrations'
      ORDER BY 1`,
  );
  const parts = rows.map((r) => `SELECT '${r.name}' AS t, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM ${r.name} x`);
  const sql = parts.length === 0 ? "SELECT '' AS digest" : `SELECT string_agg(t || '=' || h, ',' ORDER BY t) AS digest FROM (${parts.join(" UNION ALL ")}) s`;
  return {
    take: async () => (await client.query<{ digest: string }>(sql)).rows[0]!.digest,
    close: () => client.end(),
  };
}
