import { MhError } from "@metaharness/errors";
import { describe, expect, it } from "vitest";
import { clientError } from "./client-errors.js";

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe("clientError", () => {
  it("a client's unstorable text is INVALID_ARGUMENT", () => {
    expect((clientError(pgError("22021", "invalid byte sequence")) as MhError).code).toBe("INVALID_ARGUMENT");
    // A lone surrogate in jsonb (test/fuzz/http.test.ts: an agent named "\ud800" was a 500).
    expect((clientError(pgError("22P02", "invalid input syntax for type json")) as MhError).code).toBe("INVALID_ARGUMENT");
    const other = pgError("22P02", "invalid input syntax for type uuid");
    expect(clientError(other)).toBe(other);
  });

  // What the services met while PostgreSQL restarted (test/fault/postgres-restart.test.ts): each was INTERNAL.
  it.each([
    ["57P03", "the database system is starting up"],
    ["57P03", "the database system is not yet accepting connections"],
    ["57P01", "terminating connection due to administrator command"],
    ["08006", "connection failure"],
    ["ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:5432"],
    ["ECONNREFUSED", ""],
  ])("a server out of reach (%s %s) is UNAVAILABLE, its message kept", (code, message) => {
    const err = clientError(pgError(code, message));
    expect(err).toBeInstanceOf(MhError);
    expect((err as MhError).code).toBe("UNAVAILABLE");
    expect((err as MhError).message).toContain(message || code);
  });

  it("pg's own connection-lost errors (no code) are UNAVAILABLE", () => {
    for (const message of ["Connection terminated unexpectedly", "Client has encountered a connection error and is not queryable"]) {
      expect((clientError(new Error(message)) as MhError).code).toBe("UNAVAILABLE");
    }
  });

  it("anything else passes through as it is", () => {
    const other = pgError("23505", "duplicate key value");
    expect(clientError(other)).toBe(other);
    const mine = new MhError("NOT_FOUND", "x");
    expect(clientError(mine)).toBe(mine);
  });
});
