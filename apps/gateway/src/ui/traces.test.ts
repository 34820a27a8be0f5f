/**
 * Who may see a trace: the tenant owning every session the trace names, when it names at least
 * one. Ownership is asked of the caller's tenant only (the gateway's session table).
 */
import { describe, expect, it } from "vitest";
import { MAX_TRACE_SESSIONS, ownsTrace } from "./traces.js";

const mine = new Set(["sesn_a1", "sesn_a2"]);
const owns = (id: string): Promise<boolean> => Promise.resolve(mine.has(id));

describe("ownsTrace", () => {
  it("is the tenant's when every session it names is the tenant's", async () => {
    expect(await ownsTrace(["sesn_a1"], owns)).toBe(true);
    expect(await ownsTrace(["sesn_a1", "sesn_a2"], owns)).toBe(true);
  });

  it("is not when one session is another tenant's, or unknown", async () => {
    expect(await ownsTrace(["sesn_a1", "sesn_b1"], owns)).toBe(false);
    expect(await ownsTrace(["sesn_b1"], owns)).toBe(false);
  });

  it("is nobody's when it names no session", async () => {
    expect(await ownsTrace([], () => Promise.resolve(true))).toBe(false);
  });

  it("is nobody's when it names more sessions than are checked", async () => {
    const ids = Array.from({ length: MAX_TRACE_SESSIONS + 1 }, (_, i) => `sesn_${i}`);
    expect(await ownsTrace(ids.slice(0, MAX_TRACE_SESSIONS), () => Promise.resolve(true))).toBe(true);
    expect(await ownsTrace(ids, () => Promise.resolve(true))).toBe(false);
  });

  it("fails when ownership cannot be checked, rather than guessing", async () => {
    await expect(ownsTrace(["sesn_a1"], () => Promise.reject(new Error("database down")))).rejects.toThrow("database down");
  });
});
