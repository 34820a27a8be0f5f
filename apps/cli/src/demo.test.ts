/**
 * `mh demo` end to end on the embedded default: the watcher sees the whole turn live, the stale
 * harness is fenced, and every event reaches the in-process bus.
 */
import { describe, expect, it } from "vitest";
import { demo } from "./commands/demo.js";

describe("mh demo", () => {
  it("runs a session on PGlite and the in-process bus", async () => {
    const lines: string[] = [];
    const code = await demo((line) => lines.push(line));
    const output = lines.join("\n");
    expect(code).toBe(0);
    expect(output).toMatch(/^\s+1\s+user\.message\s+The add test fails/m);
    expect(output).toMatch(/^\s+14\s+session\.status_idle\s+stop_reason=\{"type":"end_turn"\}/m);
    expect(output).toContain("refused: ABORTED");
    expect(output).toContain("14 events in the log, 14 published on the bus");
  }, 30_000);
});
