/**
 * CallCancellation: the signal made on first use carries what happened before it (a client's
 * cancellation, a deadline that passed), aborts later at the deadline, and ignores a "cancelled"
 * that comes after the call finished.
 */
import { describe, expect, it } from "vitest";
import { CallCancellation } from "./call-cancellation.js";

describe("CallCancellation", () => {
  it("makes no signal until asked, and gives one already aborted by an earlier cancellation", () => {
    const c = new CallCancellation(new Date(Date.now() + 60_000));
    c.cancelled();
    expect(c.signal.aborted).toBe(true);
    expect(c.signal.reason).toMatchObject({ code: "CANCELLED" });
  });

  it("names the deadline when it had passed, whether the signal is asked for before or after grpc-js ends the call", () => {
    const before = new CallCancellation(new Date(Date.now() - 1));
    expect(before.signal.reason).toMatchObject({ code: "DEADLINE_EXCEEDED" });
    const after = new CallCancellation(new Date(Date.now() - 1));
    after.cancelled();
    expect(after.signal.reason).toMatchObject({ code: "DEADLINE_EXCEEDED" });
  });

  it("aborts a signal asked for before the deadline when it passes", async () => {
    const c = new CallCancellation(new Date(Date.now() + 20));
    expect(c.signal.aborted).toBe(false);
    const reason = await new Promise((resolve) => c.signal.addEventListener("abort", () => resolve(c.signal.reason), { once: true }));
    expect(reason).toMatchObject({ code: "DEADLINE_EXCEEDED" });
  });

  it("is not cancelled by what comes after the call finished", () => {
    const c = new CallCancellation(undefined);
    const signal = c.signal;
    c.finish();
    c.cancelled();
    expect(signal.aborted).toBe(false);
    const unasked = new CallCancellation(new Date(Date.now() - 1));
    unasked.finish();
    unasked.cancelled();
    expect(unasked.signal.aborted).toBe(false);
  });
});
