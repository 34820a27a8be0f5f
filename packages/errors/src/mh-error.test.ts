/** MhError: normalising whatever was thrown, and the closed code vocabulary's mappings. */
import { describe, expect, it } from "vitest";
import { Code, MhError, codeName, invalidArgument } from "./index.js";

describe("MhError.from", () => {
  it("passes an MhError through unchanged", () => {
    const err = new MhError("NOT_FOUND", "session sesn_x not found", { field: "session_id" });
    expect(MhError.from(err)).toBe(err);
  });

  it("keeps the code of a grpc-js ServiceError and prefers its details as the message", () => {
    const serviceError = Object.assign(new Error("9 FAILED_PRECONDITION: at seq 3"), { code: 9, details: "at seq 3" });
    const err = MhError.from(serviceError);
    expect([err.code, err.message, err.cause]).toEqual(["FAILED_PRECONDITION", "at seq 3", serviceError]);
  });

  it("turns anything else into INTERNAL, keeping the cause", () => {
    const cause = new TypeError("boom");
    const err = MhError.from(cause);
    expect([err.code, err.message, err.cause]).toEqual(["INTERNAL", "boom", cause]);
    expect(MhError.from("a string").message).toBe("a string");
    expect(MhError.from({ code: "ECONNREFUSED" }).code).toBe("INTERNAL");
  });
});

describe("codes", () => {
  it("are gRPC's numbers", () => {
    expect(Code.INVALID_ARGUMENT).toBe(3);
    expect(codeName(14)).toBe("UNAVAILABLE");
    expect(codeName(99)).toBeUndefined();
  });

  it("say which failures a caller may retry", () => {
    expect(new MhError("UNAVAILABLE", "down").retryable).toBe(true);
    expect(new MhError("INVALID_ARGUMENT", "bad").retryable).toBe(false);
    expect(invalidArgument("limit", "at most 1000")).toMatchObject({ code: "INVALID_ARGUMENT", field: "limit", message: "limit: at most 1000" });
  });
});
