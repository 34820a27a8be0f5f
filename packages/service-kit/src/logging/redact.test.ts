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

it("leaves a path's absent value absent, arrays and errors as they are", () => {
  const redact = redactor(["*.token"]);
  const err = Object.assign(new Error("e"), { token: "t" });
  const line = { a: { token: undefined }, list: [{ token: "t" }], err };
  const out = redact(line);
  expect(out).toBe(line);
  expect(out.err).toBe(err);
});
