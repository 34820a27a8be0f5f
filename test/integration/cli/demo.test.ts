/**
 * `mh demo` as the README runs it, as its own process on the embedded default (PGlite in memory,
 * the in-process bus, the real bubblewrap broker, the offline model): the agent's text arrives
 * token by token, every tool call of the fix is shown with its result, the summary adds it up,
 * and the exit code says the turn ended normally.
 */
import { describe, expect, it } from "vitest";
import { boundariesWithin, mh } from "./mh.js";

describe("mh demo", () => {
  it("fixes the bug in a real sandbox, streamed live", async () => {
    const started = Date.now();
    const demo = mh(["demo"]);
    const code = await demo.exited;
    const out = demo.stdout();
    expect(code, `${out}\n${demo.stderr()}`).toBe(0);

    expect(out).toMatch(/embedded stack ready in .*: PGlite in memory, in-process bus, bubblewrap sandboxes, offline model/);
    expect(out).toMatch(/^◆ sandbox sbx_\S+ ready \(bubblewrap, /m);
    // The tool calls, each with its duration, and what they printed.
    expect(out).toMatch(/^✓ write  stats\/lib\/stats\.sh  \d+ ms$/m);
    expect(out).toMatch(/^✗ bash  cd \/workspace\/stats && bash test\.sh  [\d.]+ m?s$/m);
    expect(out).toContain("│ FAIL max -7 -2 -5: expected -2, got 0");
    expect(out).toMatch(/^✓ grep  \^max\\\(\\\) in stats /m);
    expect(out).toMatch(/^✓ edit  stats\/lib\/stats\.sh /m);
    expect(out).toContain("│ 4 passed, 0 failed");
    expect(out).toMatch(/│ [0-9a-f]{7} max: start from the first value/);
    expect(out).toContain("the fix is committed in the sandbox's repository");
    expect(out).toMatch(/^── end_turn · 10 tool calls \(1 failed\) · 8 model requests · tokens in [\d,]+ .*· out [\d,]+ · [\d.]+ s$/m);

    // Tokens as they come: the explanation reached stdout in many pieces, not as one block.
    expect(boundariesWithin(demo.chunks, "max() starts its running maximum at 0 instead of at its first argument")).toBeGreaterThanOrEqual(3);
    expect(demo.stderr()).toBe("");
    process.stdout.write(`mh demo: ${Date.now() - started} ms wall\n`);
  }, 180_000);
});
