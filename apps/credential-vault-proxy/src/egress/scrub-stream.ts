/**
 * A byte stream with every occurrence of some secrets (in each form `secretForms` lists) replaced
 * by "[redacted]", however the occurrences fall across chunks: each chunk is scanned together with the tail of the previous
 * one, and the last (longest secret - 1) bytes are held back until the next chunk or the end.
 * Used on egress responses, so a server that echoes the credential we injected (a debugging
 * endpoint, an error page) cannot hand it to the sandbox.
 */
import { Transform } from "node:stream";
import { secretForms, type Secret } from "../crypto/secret.js";

const REPLACEMENT = Buffer.from("[redacted]");

export function scrubStream(secrets: readonly Secret[]): Transform {
  const needles = secretForms(secrets).map((form) => Buffer.from(form, "utf8"));
  const keep = Math.max(0, ...needles.map((n) => n.length - 1));
  let tail: Buffer = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      const all = replaceAll(Buffer.concat([tail, chunk]), needles);
      const cut = Math.max(0, all.length - keep);
      tail = all.subarray(cut);
      cb(null, all.subarray(0, cut));
    },
    flush(cb) {
      cb(null, tail);
    },
  });
}

export function replaceAll(buf: Buffer, needles: readonly Buffer[]): Buffer {
  let out = buf;
  for (const needle of needles) {
    let at = out.indexOf(needle);
    if (at < 0) continue;
    const parts: Buffer[] = [];
    let from = 0;
    while (at >= 0) {
      parts.push(out.subarray(from, at), REPLACEMENT);
      from = at + needle.length;
      at = out.indexOf(needle, from);
    }
    parts.push(out.subarray(from));
    out = Buffer.concat(parts);
  }
  return out;
}
