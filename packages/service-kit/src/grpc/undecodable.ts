/**
 * Requests that cannot be decoded answer INVALID_ARGUMENT, not INTERNAL. grpc-js answers a
 * deserializer that throws with INTERNAL ("Error deserializing request"), which reads as the
 * server's fault, while ts-proto's decoders throw on a client's mistake too: a 64-bit integer
 * above 2^53-1 (generated with forceLong=number), a truncated message. So our services'
 * deserializers return an UndecodableRequest instead of throwing, and the handlers refuse it
 * (grpc-handlers.ts).
 *
 * A string that is not valid UTF-8 is refused too, as proto3 asks of parsers: the decoder reads
 * its bad bytes as U+FFFD, and the log stored "a\uFFFD\uFFFDb" for what a client meant as
 * something else, without a word. A request is refused when its strings hold more U+FFFD than its
 * bytes spell (EF BF BD), naming the first string holding one. The check costs about 0.4 µs an
 * event of an EmitEvents (100 events: 35-50 µs beside 65-110 µs of decoding, alternated).
 *
 * What the decoder skips unread is checked too (wireFault): an unknown field holding an
 * over-long varint, a field number 0, a stray end of group decoded without a word, and
 * CreateSession stored a session from such bytes. That walk costs about 50 µs for an EmitEvents
 * of 100 tool-use events (13 KB) beside 85 µs of decoding (2026-12-03, this VM).
 */
import type { ServiceDefinition } from "@grpc/grpc-js";
import { unsafeIntegerField, wireFault } from "@metaharness/proto";
import { visitText } from "./request-text.js";

export class UndecodableRequest {
  /** `field`: the field at fault, when known (a string that is not UTF-8). */
  constructor(
    readonly reason: string,
    readonly field?: string,
  ) {}
}

const REPLACEMENT = "\uFFFD";
const REPLACEMENT_UTF8 = Buffer.from(REPLACEMENT, "utf8");

/** `definition` with every request deserializer returning an UndecodableRequest for what it cannot decode. */
export function decodingSafely(definition: ServiceDefinition): ServiceDefinition {
  return Object.fromEntries(
    Object.entries(definition).map(([name, method]) => {
      const decode = method.requestDeserialize;
      const requestDeserialize = (bytes: Buffer): unknown => {
        let request: unknown;
        try {
          request = decode(bytes);
        } catch (err) {
          return undecodable(method.path, bytes, err);
        }
        const fault = wireFault(method.path, bytes);
        if (fault !== undefined) return new UndecodableRequest(fault);
        // Not on a client stream (a hand's): one message refused ends the whole stream, and with
        // it every sandbox on the hand; its text keeps the decoder's replacements.
        const replaced = method.requestStream ? undefined : replacedText(request, bytes);
        return replaced === undefined ? request : new UndecodableRequest(`${replaced}: is not valid UTF-8`, replaced);
      };
      return [name, { ...method, requestDeserialize }];
    }),
  );
}

/** Why `bytes` did not decode, naming the field when it is an integer too large (ts-proto's words name none). */
function undecodable(path: string, bytes: Buffer, err: unknown): UndecodableRequest {
  const reason = err instanceof Error ? err.message : String(err);
  if (!/SAFE_INTEGER/.test(reason)) return new UndecodableRequest(reason);
  const field = unsafeIntegerField(path, bytes);
  const what = `is outside ±${Number.MAX_SAFE_INTEGER}, the integers this service reads exactly`;
  return field === undefined ? new UndecodableRequest(`an integer ${what}`) : new UndecodableRequest(`${field}: ${what}`, field);
}

/** The first string of `request` holding a U+FFFD its bytes did not spell, if any. */
function replacedText(request: unknown, bytes: Buffer): string | undefined {
  // Counted first without naming anything (naming every field cost four times the decoding of
  // a 100-event EmitEvents); the walk that names the field runs only for a request refused.
  const count = replacementsIn(request);
  if (count === 0) return undefined;
  let spelled = 0;
  for (let at = bytes.indexOf(REPLACEMENT_UTF8); at >= 0 && spelled < count; at = bytes.indexOf(REPLACEMENT_UTF8, at + 1)) spelled += 1;
  if (spelled >= count) return undefined;
  let first: string | undefined;
  visitText(request, "", new Set(), (text, field) => {
    if (first === undefined && text.includes(REPLACEMENT)) first = field;
  });
  return first ?? "";
}

/** U+FFFD in every string and key of a decoded message (it runs on every request: kept lean). */
function replacements(value: object): number {
  let n = 0;
  if (Array.isArray(value)) {
    for (const item of value) n += replacementsIn(item);
    return n;
  }
  const record = value as Record<string, unknown>;
  // for...in, not Object.entries: no array per object (ts-proto's messages have no prototype keys).
  for (const key in record) n += replacementsOf(key) + replacementsIn(record[key]);
  return n;
}

function replacementsIn(value: unknown): number {
  if (typeof value === "string") return replacementsOf(value);
  if (typeof value !== "object" || value === null || value instanceof Uint8Array || value instanceof Date) return 0;
  return replacements(value);
}

function replacementsOf(text: string): number {
  let n = 0;
  for (let at = text.indexOf(REPLACEMENT); at >= 0; at = text.indexOf(REPLACEMENT, at + 1)) n += 1;
  return n;
}
