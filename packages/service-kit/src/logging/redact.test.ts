/** Redaction by path, parsed once: what pino's `redact` did with these paths, without copying what it leaves. */
import { expect, it } from "vitest";
import { CENSOR, parsePath, redactor } from "./redact.js";

it("reads dotted, bracketed and wildcard paths, and refuses what it cannot read", () => {
  expect(parsePath("token")).toEqual(["token"]);
  expect(parsePath("*.headers.authorization")).toEqual(["*", "headers", "authorization"]);
  expect(parsePath('headers["x-api-key"]')).toEqual(["headers", "x-api-key"]);
  expect(parsePath("a['b.c'].d")).toEqual(["a", "b.c", "d"]);
  for (const bad of ["", "a..b", "a.", "a[b]", 'a["b"'] ) expect(() => parsePath(bad)).toThrow(/redaction path/);
});

it("redacts at the top level, under any key, under a named key, and leaves the caller's objects as they were", () => {
  const redact = redactor(["password", "*.token", "*.headers.authorization", 'headers["x-api-key"]']);
  const line = {
    password: "p",
    creds: { token: "t", keep: 1 },
    req: { headers: { authorization: "Bearer x", accept: "*/*" } },
    headers: { "x-api-key": "k", host: "h" },
    n: 3,
  };
  const copy = structuredClone(line);
  expect(redact(line)).toEqual({
    password: CENSOR,
    creds: { token: CENSOR, keep: 1 },
    req: { headers: { authorization: CENSOR, accept: "*/*" } },
    headers: { "x-api-key": CENSOR, host: "h" },
    n: 3,
  });
  expect(line).toEqual(copy);
});

it("returns a line that names no path itself, uncopied", () => {
  const redact = redactor(["password", "*.token"]);
  const line = { method: "POST", route: "/v1/sessions/:session_id/events", status: 200, nested: { a: 1 } };
  expect(redact(line)).toBe(line);
});

it("leaves a path's absent value absent and arrays as they are", () => {
  const redact = redactor(["*.token"]);
  const line = { a: { token: undefined }, list: [{ token: "t" }] };
  expect(redact(line)).toBe(line);
});

it("redacts an error's own fields in a copy that is still the error (prototype, message, stack), as pino's redact did", () => {
  const redact = redactor(["*.token"]);
  const err = Object.assign(new TypeError("e"), { token: "t", code: "C" });
  const out = redact({ reason: err });
  expect(out.reason).toBeInstanceOf(TypeError);
  expect(out.reason).toMatchObject({ message: "e", token: CENSOR, code: "C" });
  expect(out.reason.stack).toBe(err.stack);
  expect(JSON.stringify(out)).toBe('{"reason":{"token":"[redacted]","code":"C"}}');
  expect(err.token).toBe("t");
  // One with nothing to redact is itself.
  const plain = new Error("p");
  expect(redact({ reason: plain }).reason).toBe(plain);
});
