/**
 * Records what the gateway answers the tests' SDK clients, for the conformance check
 * (conform.ts): enabled by MH_CONFORMANCE_DIR (scripts/test-all.sh sets it for the integration
 * suite), a no-op otherwise. Each stack writes the gateway's /openapi.json (which names the SDK
 * type every route returns) and, per response, one JSON line: method, path, status and body, or
 * for an event stream one line per SSE message as the client reads it (a stream the client
 * aborts keeps what it read). Recording is on the client side, in the fetch the test support hands the SDK:
 * the gateway's own code stays free of test hooks, and the records are exactly what the SDK read.
 */
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { expect } from "vitest";

export interface RecordLine {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** The JSON body; for an event stream, one SSE message's event name and data. */
  readonly body?: unknown;
  readonly sse?: { readonly event: string; readonly data: unknown };
  /** Asked for our additions (MH-Extensions / mh_extensions): not the SDK's shapes, not checked. */
  readonly extensions?: boolean;
  /** What the test was: the vitest file, when known. */
  readonly file?: string;
}

const DIR = process.env["MH_CONFORMANCE_DIR"];

export const recording = (): boolean => DIR !== undefined && DIR !== "";

let file: string | undefined;
function out(): string {
  if (file === undefined) {
    mkdirSync(DIR!, { recursive: true });
    file = join(DIR!, `records-${process.pid}-${randomBytes(4).toString("hex")}.jsonl`);
  }
  return file;
}

function write(line: RecordLine): void {
  appendFileSync(out(), `${JSON.stringify({ ...line, file: testFile() })}\n`);
}

function testFile(): string | undefined {
  try {
    return expect.getState().testPath;
  } catch {
    return undefined;
  }
}

/** Saves the gateway's OpenAPI document once per gateway (they are all alike). */
export async function recordOpenApi(baseUrl: string): Promise<void> {
  if (!recording()) return;
  const res = await fetch(`${baseUrl}/openapi.json`);
  mkdirSync(DIR!, { recursive: true });
  writeFileSync(join(DIR!, "openapi.json"), await res.text());
}

/**
 * The stream passed through as it is read, each SSE message recorded on the way: no copy is
 * read on the side, so a client that stops reading (aborts) closes the stream as it would
 * without the recorder (a side copy kept it open, and counted against the tenant's streams).
 */
function recordStream(base: Omit<RecordLine, "body" | "sse">, body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  let buffer = "";
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(chunk);
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = "";
          let data = "";
          for (const line of message.split("\n")) {
            if (line.startsWith("event: ")) event = line.slice(7);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          if (event !== "" && event !== "ping") write({ ...base, sse: { event, data: JSON.parse(data) as unknown } });
        }
      },
    }),
  );
}

/** A fetch that records what it returns (only when recording). */
export function recordingFetch(inner: typeof fetch): typeof fetch {
  if (!recording()) return inner;
  return async (input, init) => {
    const res = await inner(input, init);
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const type = res.headers.get("content-type") ?? "";
    const header = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined)).get("mh-extensions");
    const extensions = header === "true" || header === "1" || url.searchParams.get("mh_extensions") === "true";
    const base = { method, path: url.pathname, status: res.status, ...(extensions ? { extensions } : {}) };
    if (type.startsWith("text/event-stream") && res.body !== null) {
      return new Response(recordStream(base, res.body), { status: res.status, statusText: res.statusText, headers: res.headers });
    } else if (type.startsWith("application/json")) {
      const text = await res.clone().text();
      write({ ...base, body: text === "" ? null : (JSON.parse(text) as unknown) });
    }
    return res;
  };
}
