/** Typed error details: written by a constructor, read back whole or not at all, across the JSON wire. */
import { describe, expect, it } from "vitest";
import { MhError } from "../mh-error.js";
import { LeaseHolder, MeasuredSize, SizeLimit, defineDetail } from "../index.js";

describe("error details", () => {
  it("are read back typed from an error that carries them", () => {
    const err = new MhError("FAILED_PRECONDITION", "leased", { details: LeaseHolder.of({ holder: "harness-b", epoch: 3 }) });
    const holder = LeaseHolder.find(err);
    expect(holder).toEqual({ holder: "harness-b", epoch: 3 });
    expect(SizeLimit.find(err)).toBeUndefined();
  });

  it("travel as one flat JSON object, several at once", () => {
    const err = new MhError("INVALID_ARGUMENT", "too big", { details: { ...SizeLimit.of({ limit_bytes: 10 }), ...MeasuredSize.of({ size_bytes: 12 }) } });
    const wire = JSON.parse(JSON.stringify(err.details)) as Record<string, number>;
    expect(wire).toEqual({ limit_bytes: 10, size_bytes: 12 });
    const back = new MhError("INVALID_ARGUMENT", "too big", { details: wire });
    expect([SizeLimit.find(back)?.limit_bytes, MeasuredSize.find(back)?.size_bytes]).toEqual([10, 12]);
  });

  it("are absent when a field is missing or has another type, and for anything that is no error", () => {
    const Pair = defineDetail("pair", { a: "string", b: "boolean" });
    expect(Pair.find(new MhError("ABORTED", "x", { details: { a: "1" } }))).toBeUndefined();
    expect(Pair.find(new MhError("ABORTED", "x", { details: { a: "1", b: "true" } }))).toBeUndefined();
    expect(Pair.find(new MhError("ABORTED", "x", { details: Pair.of({ a: "1", b: false }) }))).toEqual({ a: "1", b: false });
    expect([Pair.find(undefined), Pair.find("text"), Pair.find(new Error("plain"))]).toEqual([undefined, undefined, undefined]);
  });
});
