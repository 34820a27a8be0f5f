/**
 * The HTTP details the SDK depends on: its query encoding, field names in errors, cursors bound
 * to their list.
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../errors/api-error.js";
import { decodeCursor, encodeCursor, isSeqPosition, isTimeIdPosition } from "./pagination.js";
import { parseQuery } from "./server.js";
import { fieldOf } from "./validation.js";

describe("parseQuery", () => {
  it("reads the SDK's bracket arrays and repeated keys as arrays, and keeps named brackets", () => {
    expect(parseQuery("types%5B%5D=a&types%5B%5D=b&statuses=idle&statuses=running&one%5B%5D=x&created_at%5Bgte%5D=t&limit=5")).toEqual({
      types: ["a", "b"],
      statuses: ["idle", "running"],
      one: ["x"],
      "created_at[gte]": "t",
      limit: "5",
    });
  });

  it("reads no query as a new empty object each time (validation may coerce into it)", () => {
    const one = parseQuery("");
    expect(one).toEqual({});
    expect(parseQuery("")).not.toBe(one);
  });
});

describe("fieldOf", () => {
  it("spells JSON pointers as the SDK's params", () => {
    expect(fieldOf("/tools/0/configs/12/name")).toBe("tools[0].configs[12].name");
    expect(fieldOf("/metadata/a~1b")).toBe("metadata.a/b");
    expect(fieldOf("")).toBe("");
  });
});

describe("cursors", () => {
  it("round-trip, and are refused on another list or when forged", () => {
    const page = encodeCursor("agents", ["2026-01-01T00:00:00.000Z", "agent_1"]);
    expect(decodeCursor("agents", page, isTimeIdPosition)).toEqual({ position: ["2026-01-01T00:00:00.000Z", "agent_1"], direction: "next" });
    expect(decodeCursor("agents", undefined, isTimeIdPosition)).toBeUndefined();
    expect(() => decodeCursor("sessions", page, isTimeIdPosition)).toThrow(ApiError);
    expect(() => decodeCursor("events", "bm90IGpzb24", isSeqPosition)).toThrow(/^page: /);
    expect(() => decodeCursor("events", encodeCursor("events", -1), isSeqPosition)).toThrow(/^page: /);
  });
});
