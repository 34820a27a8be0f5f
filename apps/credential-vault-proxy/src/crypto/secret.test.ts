import { inspect } from "node:util";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "@metaharness/service-kit";
import { Secret, scrub } from "./secret.js";

describe("Secret", () => {
  const s = new Secret("tok_very_secret_123");

  it("never prints its value", () => {
    expect(String(s)).toBe("[secret]");
    // eslint-disable-next-line @typescript-eslint/restrict-template-expressions -- the point: interpolating a Secret by mistake
    expect(`${s}`).toBe("[secret]");
    expect(JSON.stringify({ s })).toBe('{"s":"[secret]"}');
    expect(inspect({ s }, { depth: 5, showHidden: true })).not.toContain("tok_very");
    expect(s.reveal()).toBe("tok_very_secret_123");
  });

  it("stays out of log lines by construction", () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _e, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const logger = createLogger({ service: "t", destination });
    logger.info({ credential: { anything: s }, list: [s] }, "logged");
    expect(lines.join("")).not.toContain("tok_very");
    expect(lines.join("")).toContain("[secret]");
  });

  it("scrubs occurrences from foreign text", () => {
    expect(scrub("echo: tok_very_secret_123!", [s])).toBe("echo: [redacted]!");
  });
});
