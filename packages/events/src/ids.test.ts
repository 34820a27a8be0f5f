/** Generated ids: shape, order by time, validators. */
import { describe, expect, it } from "vitest";
import { isValidEventId, isValidSessionId, newEventId, newSessionId, timeOfId } from "./ids.js";

describe("ids", () => {
  it("are a prefix and a 26-character Crockford ULID", () => {
    expect(newEventId()).toMatch(/^sevt_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(newSessionId()).toMatch(/^sesn_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(isValidEventId(newEventId())).toBe(true);
    expect(isValidSessionId(newSessionId())).toBe(true);
  });

  it("carry their creation time and sort by it", () => {
    // Ahead of every earlier id of this file: an older time would reuse the last one (monotonic).
    const t = Date.now() + 86_400_000;
    const early = newEventId(t);
    const late = newEventId(t + 1000);
    expect(timeOfId(early)).toBe(t);
    expect(timeOfId(late)).toBe(t + 1000);
    expect(early < late).toBe(true);
    expect(timeOfId("sevt_not-a-ulid")).toBeUndefined();
  });

  it("increase strictly within one millisecond and when the clock steps back", () => {
    const now = Date.now() + 2 * 86_400_000;
    const ids = Array.from({ length: 1000 }, () => newEventId(now));
    ids.push(newEventId(now - 5000));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("validate client-chosen event ids", () => {
    for (const ok of ["a", "msg-1", "client:42.retry_0", "x".repeat(128)]) expect(isValidEventId(ok)).toBe(true);
    for (const bad of ["", "x".repeat(129), "has space", "slash/", "é", 7]) expect(isValidEventId(bad)).toBe(false);
  });

  it("validate session ids", () => {
    for (const ok of ["sesn_a", "sesn_A-b_9", `sesn_${"x".repeat(64)}`]) expect(isValidSessionId(ok)).toBe(true);
    for (const bad of ["sesn_", "sevt_abc", "sesn_a.b", `sesn_${"x".repeat(65)}`, "abc", null]) {
      expect(isValidSessionId(bad)).toBe(false);
    }
  });
});
