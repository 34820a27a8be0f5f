import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { Secret } from "../crypto/secret.js";
import { scrubStream } from "./scrub-stream.js";

describe("scrubStream", () => {
  it("removes a secret however the chunks split it", async () => {
    const secret = "s3cr3t-bearer-token";
    const body = `a ${secret} b ${secret}${secret} c`;
    for (let size = 1; size <= body.length; size++) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < body.length; i += size) chunks.push(Buffer.from(body.slice(i, i + size)));
      const out = await text(Readable.from(chunks).pipe(scrubStream([new Secret(secret)])));
      expect(out).toBe("a [redacted] b [redacted][redacted] c");
    }
  });
});
