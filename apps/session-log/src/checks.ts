/**
 * Checks of requests that no store function makes, each answering INVALID_ARGUMENT naming the
 * field: a client's mistake must not reach Postgres (a NUL in a text column is a Postgres error,
 * answered as INTERNAL), be stored as something else (an unknown enum value comes back as -1,
 * and the harness would read it as a default), or fail other clients (a delta that cannot be
 * encoded ends every watcher it was delivered to).
 */
import { invalidArgument } from "@metaharness/errors";
import { checkNoNul } from "@metaharness/service-kit/grpc";
import {
  DeltaKind,
  EnvironmentNetworking,
  EnvironmentType,
  EventDelta,
  PermissionPolicy,
  ToolKind,
  type Event,
  type SessionMetadata,
} from "@metaharness/proto";

/**
 * Encoded size of one delta: other instances get it base64-encoded in a NOTIFY, whose payload
 * Postgres caps at 8000 bytes (packages/db notify-batcher.ts keeps 7000 for its items).
 */
export const MAX_DELTA_BYTES = 5000;

const DELTA_KINDS: ReadonlySet<DeltaKind> = new Set([DeltaKind.DELTA_KIND_TEXT, DeltaKind.DELTA_KIND_THINKING, DeltaKind.DELTA_KIND_INPUT_JSON]);

/**
 * Deltas for `sessionId`, their emitted_at set, each one deliverable to every instance: a delta
 * whose text makes it too big for a NOTIFY is cut into several, in order (a delta's text is a
 * fragment to append, so the pieces say the same).
 */
export function checkDeltas(deltas: readonly EventDelta[], sessionId: string): EventDelta[] {
  return deltas.flatMap((d, i) => {
    const at = `deltas[${i}]`;
    if (d.sessionId !== "" && d.sessionId !== sessionId) throw invalidArgument(`${at}.session_id`, `is ${d.sessionId} but the request is for ${sessionId}`);
    if (!DELTA_KINDS.has(d.kind)) throw invalidArgument(`${at}.kind`, "must be TEXT, THINKING or INPUT_JSON");
    if (d.emittedAt !== undefined && Number.isNaN(d.emittedAt.getTime())) throw invalidArgument(`${at}.emitted_at`, "is not a representable time");
    const delta = { ...d, sessionId, emittedAt: d.emittedAt ?? new Date() };
    const overhead = EventDelta.encode({ ...delta, text: "" }).finish().length;
    if (overhead > MAX_DELTA_BYTES / 2) throw invalidArgument(`${at}.model_request_id`, `leaves no room for text (${overhead} bytes without it)`);
    // Each piece's text stays under what is left, with room for its length prefix.
    return splitUtf8(delta.text, MAX_DELTA_BYTES - overhead - 8).map((text) => ({ ...delta, text }));
  });
}

/** `text` in pieces of at most `maxBytes` UTF-8 bytes, never splitting a character. */
function splitUtf8(text: string, maxBytes: number): string[] {
  if (Buffer.byteLength(text) <= maxBytes) return [text];
  const pieces: string[] = [];
  let piece = "";
  let bytes = 0;
  for (const ch of text) {
    const size = Buffer.byteLength(ch);
    if (bytes + size > maxBytes) {
      pieces.push(piece);
      piece = "";
      bytes = 0;
    }
    piece += ch;
    bytes += size;
  }
  pieces.push(piece);
  return pieces;
}

/** Nothing may follow a session.status_terminated in one batch: the session ends with it. */
export function checkNothingAfterTermination(events: readonly Event[]): void {
  const end = events.findIndex((e) => e.type === "session.status_terminated");
  if (end >= 0 && end < events.length - 1) {
    throw invalidArgument(`events[${end + 1}]`, `follows events[${end}], a session.status_terminated: nothing can be appended after it`);
  }
}

/**
 * The enums of a session's agent and environment, each a value this version knows; `field` is
 * where they sit in the request ("metadata", or "" for UpdateSession's own `agent`).
 */
export function checkMetadataEnums(metadata: Pick<SessionMetadata, "agent" | "environment">, field: string): void {
  const under = (name: string): string => (field === "" ? name : `${field}.${name}`);
  metadata.agent?.tools.forEach((t, i) => {
    const at = under(`agent.tools[${i}]`);
    if (!known(ToolKind, t.kind)) throw invalidArgument(`${at}.kind`, `${t.kind} is not a ToolKind`);
    if (!known(PermissionPolicy, t.permissionPolicy)) throw invalidArgument(`${at}.permission_policy`, `${t.permissionPolicy} is not a PermissionPolicy`);
  });
  const env = metadata.environment;
  if (env !== undefined) {
    if (!known(EnvironmentType, env.type)) throw invalidArgument(under("environment.type"), `${env.type} is not an EnvironmentType`);
    if (!known(EnvironmentNetworking, env.networking)) throw invalidArgument(under("environment.networking"), `${env.networking} is not an EnvironmentNetworking`);
  }
}

/** The most characters of a tenant: it is indexed, and a btree entry holds about 2,700 bytes. */
export const MAX_TENANT_CHARS = 256;
/** Fields of the log's requests whose keys are the caller's: labels, and a tool's JSON schema. */
const USER_KEYED: ReadonlySet<string> = new Set(["labels", "inputSchema"]);

/** A session's metadata, or the filters or changes of a request, with no NUL in any text (named in protobuf names). */
export function checkText(value: object, field: string): void {
  checkNoNul(value, field, USER_KEYED);
}

/** A tenant a session may be created with: its index takes it. */
export function checkTenant(tenant: string, field: string): void {
  if (tenant.length > MAX_TENANT_CHARS) throw invalidArgument(field, `must be at most ${MAX_TENANT_CHARS} characters, got ${tenant.length}`);
}

/** A value of a ts-proto enum other than UNRECOGNIZED (-1), which an unknown number decodes to. */
function known(values: Record<string, string | number>, value: number): boolean {
  return value >= 0 && Object.values(values).includes(value);
}
