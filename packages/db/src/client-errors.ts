/**
 * Postgres errors that only a client's input causes, as the INVALID_ARGUMENT they are. A NUL
 * character (or bytes that are not UTF-8) in a text value cannot be stored: Postgres refuses the
 * statement (22021 in a text column, 22P05 in jsonb), and without this the caller got INTERNAL,
 * which reads as the server's fault. Services check their fields first where they can name them;
 * this is the net under every statement.
 */
import { MhError } from "@metaharness/errors";

const UNSTORABLE_TEXT = new Set(["22021", "22P05"]);

/** `err` as an INVALID_ARGUMENT when a client's text caused it; otherwise `err` itself. */
export function clientError(err: unknown): unknown {
  const code = typeof err === "object" && err !== null && "code" in err ? err.code : undefined;
  if (typeof code === "string" && UNSTORABLE_TEXT.has(code)) {
    return new MhError("INVALID_ARGUMENT", "a text value holds a NUL character (\\u0000) or bytes that are not UTF-8, which cannot be stored", { cause: err });
  }
  return err;
}
