/**
 * Reading an answer's body as the server meant it, whatever Content-Encoding it used among those
 * Node decodes (gzip, deflate, br, stacked in any order): a scrubber can only find a secret in
 * decoded bytes, and a coding it cannot read must be refused, never passed on encoded with its
 * header dropped (the client would decode what the scrubber never saw).
 */
import type { Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: createGunzip,
  "x-gzip": createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

export type Decoding = { readonly ok: true; readonly decoders: Transform[] } | { readonly ok: false; readonly coding: string };

/** The decoders for a Content-Encoding header, first to apply first; or the coding refused. */
export function decodersFor(header: string | string[] | undefined): Decoding {
  const codings = (Array.isArray(header) ? header.join(",") : (header ?? ""))
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
  const decoders: Transform[] = [];
  // Codings are listed in the order they were applied: undo the last first.
  for (const coding of codings.reverse()) {
    const make = DECODERS[coding];
    if (make === undefined) return { ok: false, coding: coding.replace(/[^A-Za-z0-9._-]/g, "").slice(0, 40) };
    decoders.push(make());
  }
  return { ok: true, decoders };
}
