import { describe, expect, it } from "vitest";
import { Secret } from "../crypto/secret.js";
import { SHOWN_CHARS, captureResponse, captureText } from "./http-capture.js";

const SECRET = "tok_0123456789abcdef0123456789abcdef";

describe("captured HTTP answers", () => {
  it("scrub a secret before cutting, so one across the cut leaves no prefix", async () => {
    const body = `${"x".repeat(SHOWN_CHARS - 10)}${SECRET} and more`;
    const shown = await captureResponse(new Response(body, { status: 401, headers: { "content-type": "text/plain" } }), [new Secret(SECRET)]);
    expect(shown).toMatchObject({ statusCode: 401, contentType: "text/plain", bodyTruncated: true });
    expect(shown.body).toHaveLength(SHOWN_CHARS);
    expect(shown.body).not.toContain(SECRET.slice(0, 8));
    expect(shown.body.endsWith("[redacted]".slice(0, 10))).toBe(true);
  });

  it("keep a short body whole, scrubbed", () => {
    const shown = captureText(400, "application/json", JSON.stringify({ error: "invalid_grant", echo: SECRET }), [new Secret(SECRET)]);
    expect(shown).toEqual({ statusCode: 400, contentType: "application/json", body: '{"error":"invalid_grant","echo":"[redacted]"}', bodyTruncated: false });
  });
});
