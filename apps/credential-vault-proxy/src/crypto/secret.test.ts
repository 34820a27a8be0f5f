import { inspect } from "node:util";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "@metaharness/service-kit/logging";
import { Secret, scrub, secretForms } from "./secret.js";

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

  it("scrubs the encoded forms an echoing server sends back", () => {
    const secret = new Secret('p@ss word/+"x');
    const echoes = [
      `Basic ${Buffer.from(`client:${secret.reveal()}`).toString("base64")}`,
      `Basic ${Buffer.from(`cl:${secret.reveal()}`).toString("base64")}`,
      `Basic ${Buffer.from(`c:${encodeURIComponent(secret.reveal())}`).toString("base64")}`,
      `Basic ${Buffer.from(`id:${new URLSearchParams({ v: secret.reveal() }).toString().slice(2)}`).toString("base64url")}`,
      new URLSearchParams({ grant_type: "refresh_token", client_secret: secret.reveal() }).toString(),
      `https://x.test/cb?token=${encodeURIComponent(secret.reveal())}`,
      JSON.stringify({ echo: { body: secret.reveal() } }),
    ];
    for (const echo of echoes) {
      const clean = scrub(echo, [secret]);
      expect(clean, echo).toContain("[redacted]");
      for (const part of ["p@ss", "ss word", "ss%20word", "ss+word", "/+\\\"x"]) expect(clean, echo).not.toContain(part);
      // Nothing of the secret decodes back from what is left of a base64 echo.
      const b64 = /Basic (\S+)/.exec(clean)?.[1];
      if (b64 !== undefined) expect(Buffer.from(b64.replace("[redacted]", ""), "base64").toString("latin1")).not.toContain("ss wo");
    }
  });

  it("leaves short secrets and unrelated text alone", () => {
    expect(secretForms([new Secret("abc"), undefined])).toEqual([]);
    expect(scrub("nothing to see here", [new Secret("tok_very_secret_123")])).toBe("nothing to see here");
  });
});
