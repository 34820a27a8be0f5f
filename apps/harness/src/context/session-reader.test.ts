/**
 * The read_session_events tool tells the agent whether the log holds more events from the log's
 * own has_more, not from the page being full: a slice can end short of the limit at the log's
 * byte budget (large tool results), and the agent must not take that for the log's end.
 */
import { newEvent } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import type { LogPort } from "../log-port.js";
import { readSessionEvents } from "./session-reader.js";

const events = (seqs: number[]): Event[] =>
  seqs.map((seq) => ({ ...newEvent("user.message", { content: [{ block: { $case: "text", value: { text: `m${seq}` } } }] }), seq }));

/** A log answering every slice with `page`. */
const logOf = (page: { events: Event[]; hasMore: boolean }): LogPort => ({ slice: () => Promise.resolve(page) }) as unknown as LogPort;

describe("read_session_events", () => {
  it("says more events follow when the log has more, though the page is short of the limit", async () => {
    const out = await readSessionEvents({ after_seq: 0, limit: 50 }, logOf({ events: events([1, 2, 3]), hasMore: true }));
    expect(out.output).toContain('(more events follow: {"after_seq": 3})');
  });

  it("says earlier events exist when a backward read has more", async () => {
    const out = await readSessionEvents({ before_seq: 9, limit: 50 }, logOf({ events: events([6, 7, 8]), hasMore: true }));
    expect(out.output).toContain('(earlier events exist: {"before_seq": 6})');
  });

  it("adds no footer at the log's end, though the page is full", async () => {
    const out = await readSessionEvents({ after_seq: 0, limit: 3 }, logOf({ events: events([1, 2, 3]), hasMore: false }));
    expect(out.output).not.toContain("follow");
    expect(out.output.split("\n")).toHaveLength(3);
  });

  it("adds no footer when before_seq ended the range", async () => {
    const out = await readSessionEvents({ after_seq: 0, before_seq: 3, limit: 3 }, logOf({ events: events([1, 2, 3]), hasMore: true }));
    expect(out.output.split("\n")).toEqual(["#1 user.message: m1", "#2 user.message: m2"]);
  });

  it("keeps before_seq in the next call it suggests, and adds none when the page ends just before it", async () => {
    const cut = await readSessionEvents({ after_seq: 0, before_seq: 9, limit: 3 }, logOf({ events: events([1, 2, 3]), hasMore: true }));
    expect(cut.output).toContain('(more events follow: {"after_seq": 3, "before_seq": 9})');
    const ended = await readSessionEvents({ after_seq: 5, before_seq: 9, limit: 3 }, logOf({ events: events([6, 7, 8]), hasMore: true }));
    expect(ended.output.split("\n")).toHaveLength(3);
  });
});
