/**
 * SessionHeads: a head is usable while nothing past it was heard; an append made here that
 * follows it moves it on, any other (another instance's, or one with a gap) makes it unusable
 * until a snapshot shows the session again.
 */
import { describe, expect, it } from "vitest";
import { SessionHeads } from "./heads.js";

describe("SessionHeads", () => {
  it("knows a head learnt from a snapshot, and moves it with the appends made here that follow it", () => {
    const heads = new SessionHeads();
    expect(heads.lastSeq("s")).toBeUndefined();
    heads.learn("s", 0, 0);
    expect(heads.lastSeq("s")).toBe(0);
    heads.heardOf("s", 2, 1);
    expect(heads.lastSeq("s")).toBe(2);
    // An append made here that repeats what is known (heard again) changes nothing.
    heads.heardOf("s", 2, 1);
    expect(heads.lastSeq("s")).toBe(2);
  });

  it("is not usable past an append heard of without its events, or with a gap, until a snapshot shows it", () => {
    const heads = new SessionHeads();
    heads.learn("s", 3, 0);
    heads.heardOf("s", 5, undefined);
    expect(heads.lastSeq("s")).toBeUndefined();
    // Even an append here that would follow the old head: what lies between is unknown.
    heads.heardOf("s", 6, 4);
    expect(heads.lastSeq("s")).toBeUndefined();
    heads.learn("s", 6, 6);
    expect(heads.lastSeq("s")).toBe(6);
    heads.heardOf("s", 9, 8);
    expect(heads.lastSeq("s")).toBeUndefined();
  });

  it("does not trust a snapshot when an append past it was heard while it was taken", () => {
    const heads = new SessionHeads();
    heads.learn("s", 4, 5);
    expect(heads.lastSeq("s")).toBeUndefined();
    // An older snapshot learnt late does not move a head back.
    heads.learn("t", 7, 0);
    heads.learn("t", 5, 0);
    expect(heads.lastSeq("t")).toBe(7);
  });

  it("forgets a session, and every session, when told", () => {
    const heads = new SessionHeads();
    heads.learn("a", 1, 0);
    heads.learn("b", 2, 0);
    heads.forget("a");
    expect(heads.lastSeq("a")).toBeUndefined();
    expect(heads.lastSeq("b")).toBe(2);
    heads.forgetAll();
    expect(heads.lastSeq("b")).toBeUndefined();
  });

  it("keeps a bounded number of heads, forgetting the oldest learnt", () => {
    const heads = new SessionHeads();
    for (let i = 0; i <= 10_000; i++) heads.learn(`s${i}`, i, 0);
    expect(heads.lastSeq("s0")).toBeUndefined();
    expect(heads.lastSeq("s1")).toBe(1);
    expect(heads.lastSeq("s10000")).toBe(10_000);
  });
});
