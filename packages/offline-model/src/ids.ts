/**
 * Identifiers and hashes. Everything the model says is a pure function of the request, so a
 * harness that crashes and resends gets the same message id, tool_use ids and thinking signatures;
 * only `request-id` (one per HTTP exchange, as in the real API) is random.
 */
import { createHash, randomBytes } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

function base62(bytes: Uint8Array, length: number): string {
  let out = "";
  for (let i = 0; out.length < length; i++) out += BASE62[(bytes[i % bytes.length] ?? 0) % 62];
  return out;
}

export function sha256(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** JSON with object keys sorted, so equal values always serialise to equal text. */
export function stableStringify(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(v).sort()) sorted[key] = (v as Record<string, unknown>)[key];
    return sorted;
  });
}

/** `msg_01…` / `toolu_01…`: the real API's id shapes (a prefix, "01", 22 base62 characters). */
export function deterministicId(prefix: "msg" | "toolu", seed: string): string {
  return `${prefix}_01${base62(sha256(`${prefix}\n${seed}`), 22)}`;
}

export function requestId(): string {
  return `req_01${base62(randomBytes(22), 22)}`;
}

/** The request as it bears on the answer: everything but `stream`, which only changes the framing. */
export function requestFingerprint(body: Readonly<Record<string, unknown>>): string {
  const { stream: _stream, ...rest } = body;
  return sha256(stableStringify(rest)).toString("hex");
}

const SIGNATURE_KEY = "metaharness/offline-model/thinking-signature/v1";

/**
 * A thinking block's signature: a keyed hash of its text, base64 like the real ones. Fixed across
 * restarts, so a block signed before a crash still verifies after it; a changed block does not.
 */
export function signThinking(thinking: string): string {
  return createHash("sha256").update(SIGNATURE_KEY).update("\n").update(thinking).digest("base64");
}
