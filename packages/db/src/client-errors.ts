/**
 * Postgres errors as the code they are, the net under every statement.
 *
 * Only a client's input causes some: a NUL character (or bytes that are not UTF-8) in a text value
 * cannot be stored, and Postgres refuses the statement (22021 in a text column, 22P05 in jsonb);
 * nor can a lone UTF-16 surrogate in jsonb, which JSON.stringify writes as a \ud800 escape that
 * Postgres reads as invalid JSON (22P02: JSON the services wrote themselves is otherwise valid;
 * an agent named "\ud800" was a 500, found by test/fuzz/http.test.ts).
 * Without this the caller got INTERNAL, which reads as the server's fault. Services check their
 * fields first where they can name them.
 *
 * Others say the server cannot be reached right now: refused or dropped connections, a server
 * shutting down, crashed or still starting (SQLSTATE class 08, 57P01-57P03, 53300). They are
 * UNAVAILABLE, which callers retry; as INTERNAL, a harness gave up a turn while Postgres restarted
 * (test/fault/postgres-restart.test.ts).
 */
import { MhError } from "@metaharness/errors";

const UNSTORABLE_TEXT = new Set(["22021", "22P05"]);
const SERVER_UNREACHABLE = new Set(["57P01", "57P02", "57P03", "53300"]);
const SOCKET_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"]);
// pg's own errors when a connection ends under it carry no code, only these messages.
const CONNECTION_LOST = /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable)/;

/** `err` as an INVALID_ARGUMENT when a client's text caused it, UNAVAILABLE when the server is out of reach; otherwise `err` itself. */
export function clientError(err: unknown): unknown {
  if (err instanceof MhError) return err;
  const code = typeof err === "object" && err !== null && "code" in err ? err.code : undefined;
  const message = (err instanceof Error ? err.message : "") || (typeof code === "string" ? code : "");
  if (typeof code === "string" && (UNSTORABLE_TEXT.has(code) || (code === "22P02" && message.startsWith("invalid input syntax for type json")))) {
    return new MhError("INVALID_ARGUMENT", "a text value holds a NUL character (\\u0000), a lone surrogate (\\ud800-\\udfff) or bytes that are not UTF-8, which cannot be stored", { cause: err });
  }
  if (typeof code === "string" && (code.startsWith("08") || SERVER_UNREACHABLE.has(code) || SOCKET_ERRORS.has(code))) {
    return new MhError("UNAVAILABLE", `the database is unavailable: ${message}`, { cause: err });
  }
  if (code === undefined && CONNECTION_LOST.test(message)) {
    return new MhError("UNAVAILABLE", `the database is unavailable: ${message}`, { cause: err });
  }
  return err;
}
