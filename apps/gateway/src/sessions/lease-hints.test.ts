/** LeaseHints: what the appends and Wakes here last heard of a session's lease, bounded. */
import { describe, expect, it } from "vitest";
import { LeaseHints, WOKEN_HELD_MS } from "./lease-hints.js";

describe("LeaseHints", () => {
  it("knows nothing of a session it never heard of, and a lease by an append's answer until it runs out", () => {
    let now = 1_000;
    const hints = new LeaseHints(() => now);
    expect(hints.heldBeyond("s", 0)).toBe(false);
    hints.heard("s", 3_000);
    expect(hints.heldBeyond("s", 1_000)).toBe(true);
    now += 2_500;
    expect(hints.heldBeyond("s", 1_000)).toBe(false);
    expect(hints.heldBeyond("s", 0)).toBe(true);
    hints.heard("s", 0);
    expect(hints.heldBeyond("s", 0)).toBe(false);
  });

  it("takes a Wake's answer for a lease of WOKEN_HELD_MS, never shortening one heard longer", () => {
    let now = 0;
    const hints = new LeaseHints(() => now);
    hints.woke("s");
    expect(hints.heldBeyond("s", WOKEN_HELD_MS - 1)).toBe(true);
    now += WOKEN_HELD_MS;
    expect(hints.heldBeyond("s", 0)).toBe(false);
    hints.heard("s", 60_000);
    hints.woke("s");
    expect(hints.heldBeyond("s", 50_000)).toBe(true);
  });

  it("forgets the sessions heard of longest ago beyond its bound", () => {
    const hints = new LeaseHints(() => 0, 2);
    hints.heard("a", 5_000);
    hints.heard("b", 5_000);
    hints.heard("a", 5_000);
    hints.woke("c");
    expect(["a", "b", "c"].map((s) => hints.heldBeyond(s, 0))).toEqual([true, false, true]);
  });
});
