/** How a publish is cut into produce requests: by records and by bytes, in order. */
import { describe, expect, it } from "vitest";
import { chunks } from "./kafka-publisher.js";
import type { BusRecord } from "./types.js";

const record = (key: string, bytes: number): BusRecord => ({ topic: "t", key, value: new Uint8Array(bytes), headers: { h: "v" } });
const keys = (runs: BusRecord[][]): string[][] => runs.map((run) => run.map((r) => r.key));

describe("chunks", () => {
  it("cuts by record count and by bytes, keeping the order, and sends a record bigger than the limit alone", () => {
    const records = [record("a", 400), record("b", 400), record("c", 5000), record("d", 10), record("e", 10), record("f", 10)];
    // Each record weighs its key, value and headers (3 bytes here).
    expect(keys(chunks(records, 2, 1000))).toEqual([["a", "b"], ["c"], ["d", "e"], ["f"]]);
    expect(keys(chunks(records, 100, 1000))).toEqual([["a", "b"], ["c"], ["d", "e", "f"]]);
    expect(keys(chunks(records, 100, 803))).toEqual([["a"], ["b"], ["c"], ["d", "e", "f"]]);
    expect(chunks([], 10, 10)).toEqual([]);
  });
});
