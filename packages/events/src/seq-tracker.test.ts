import { describe, expect, it } from "vitest";
import { SeqTracker } from "./seq-tracker.js";

describe("SeqTracker", () => {
  it("tells the next event from a redelivered one and from a gap, per session", () => {
    const t = new SeqTracker();
    expect(t.accept("a", 1)).toEqual({ kind: "next" });
    expect(t.accept("b", 1)).toEqual({ kind: "next" });
    expect(t.accept("a", 2)).toEqual({ kind: "next" });
    expect(t.accept("a", 2)).toEqual({ kind: "duplicate" });
    expect(t.accept("a", 1)).toEqual({ kind: "duplicate" });
    expect(t.accept("a", 6)).toEqual({ kind: "gap", from: 3, to: 5 });
    expect(t.accept("a", 7)).toEqual({ kind: "next" });
    expect([t.lastSeq("a"), t.lastSeq("b"), t.lastSeq("c")]).toEqual([7, 1, 0]);
  });

  it("starts from stored seqs, forgets ended sessions, and refuses a seq that cannot be", () => {
    const t = new SeqTracker([["a", 10]]);
    expect(t.accept("a", 10)).toEqual({ kind: "duplicate" });
    expect(t.accept("a", 11)).toEqual({ kind: "next" });
    t.forget("a");
    expect([...t.entries()]).toEqual([]);
    expect(() => t.accept("a", 0)).toThrow(RangeError);
    expect(() => t.accept("a", 1.5)).toThrow(RangeError);
  });
});
