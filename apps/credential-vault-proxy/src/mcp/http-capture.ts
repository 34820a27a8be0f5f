/**
 * An HTTP error response as a validation probe may show it to an admin: status, content type and
 * the start of the body, scrubbed of the credential's secrets. The body is read up to a bound,
 * scrubbed whole, and only then cut, so a secret split by the cut cannot survive as a prefix.
 */
import type { ProbeHttpResponse } from "@metaharness/proto";
import { scrub, type Secret } from "../crypto/secret.js";

/** Bytes of a body read at most. */
const READ_BYTES = 64 * 1024;
/** Characters of a body shown at most. */
export const SHOWN_CHARS = 4 * 1024;

export async function captureResponse(response: Response, secrets: ReadonlyArray<Secret | undefined>): Promise<ProbeHttpResponse> {
  const { text, cut } = await readBounded(response);
  const clean = scrub(text, secrets);
  return {
    statusCode: response.status,
    contentType: (response.headers.get("content-type") ?? "").slice(0, 256),
    body: clean.slice(0, SHOWN_CHARS),
    bodyTruncated: cut || clean.length > SHOWN_CHARS,
  };
}

/**
 * The same from text already read (a token endpoint's answer), with `status` and `contentType`;
 * `cut` when the text is only the start of the body.
 */
export function captureText(status: number, contentType: string, text: string, secrets: ReadonlyArray<Secret | undefined>, cut = false): ProbeHttpResponse {
  const clean = scrub(text.slice(0, READ_BYTES), secrets);
  return {
    statusCode: status,
    contentType: contentType.slice(0, 256),
    body: clean.slice(0, SHOWN_CHARS),
    bodyTruncated: cut || clean.length > SHOWN_CHARS || text.length > READ_BYTES,
  };
}

/** A body read up to 64 KiB and no further (`cut` when there was more, or reading failed). */
export async function readBounded(response: Response): Promise<{ text: string; cut: boolean }> {
  const reader: ReadableStreamDefaultReader<Uint8Array> | undefined = response.body?.getReader();
  if (reader === undefined) return { text: "", cut: false };
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
      if (size >= READ_BYTES) {
        cut = true;
        break;
      }
    }
  } catch {
    cut = true;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return { text: Buffer.concat(chunks).subarray(0, READ_BYTES).toString("utf8"), cut };
}
