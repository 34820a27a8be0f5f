/**
 * The gateway's client of Jaeger's query API: `GET <MH_JAEGER_QUERY_URL>/api/traces/<id>`, the
 * JSON Jaeger's own UI reads. Bounded: one request of at most JAEGER_TIMEOUT_MS, an answer of at
 * most MAX_TRACE_BYTES. Failures are catalog errors with our own words (a backend's message is
 * never echoed; the cause is logged): unreachable or a malformed answer is `unavailable`, too
 * slow is `timeout`. An unknown trace is undefined.
 */
import { ApiError } from "../errors/api-error.js";

export const JAEGER_TIMEOUT_MS = 5_000;
/** A trace of our services is kilobytes; this keeps a runaway one from filling memory. */
export const MAX_TRACE_BYTES = 16 * 1024 * 1024;

/** A tag or log field: `type` is string, bool, int64, float64 or binary (base64). */
export interface JaegerKeyValue {
  readonly key: string;
  readonly type: string;
  readonly value: unknown;
}

export interface JaegerSpan {
  readonly traceID: string;
  readonly spanID: string;
  readonly operationName: string;
  readonly references?: ReadonlyArray<{ readonly refType: string; readonly traceID: string; readonly spanID: string }> | null;
  /** Microseconds since the epoch. */
  readonly startTime: number;
  /** Microseconds. */
  readonly duration: number;
  readonly tags?: readonly JaegerKeyValue[] | null;
  /** Span events (OpenTelemetry's), their name in the `event` field. */
  readonly logs?: ReadonlyArray<{ readonly timestamp: number; readonly fields?: readonly JaegerKeyValue[] | null }> | null;
  readonly processID: string;
  readonly warnings?: readonly string[] | null;
}

export interface JaegerTrace {
  readonly traceID: string;
  readonly spans: readonly JaegerSpan[];
  readonly processes: Readonly<Record<string, { readonly serviceName: string }>>;
  readonly warnings?: readonly string[] | null;
}

export interface JaegerQueryOptions {
  readonly timeoutMs?: number;
  readonly maxBytes?: number;
}

const UNREACHABLE = "Jaeger's query API (MH_JAEGER_QUERY_URL) cannot be reached, so the trace cannot be shown; retry once Jaeger is up.";

export class JaegerQuery {
  private readonly timeoutMs: number;
  private readonly maxBytes: number;

  /** `baseUrl`: MH_JAEGER_QUERY_URL, without a trailing slash. */
  constructor(
    private readonly baseUrl: string,
    opts: JaegerQueryOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? JAEGER_TIMEOUT_MS;
    this.maxBytes = opts.maxBytes ?? MAX_TRACE_BYTES;
  }

  /** The whole trace, or undefined when Jaeger has no such trace. `traceId`: 32 lowercase hex digits. */
  async trace(traceId: string): Promise<JaegerTrace | undefined> {
    const url = `${this.baseUrl}/api/traces/${encodeURIComponent(traceId)}`;
    const signal = AbortSignal.timeout(this.timeoutMs);
    let text: string;
    let status: number;
    try {
      const res = await fetch(url, { signal, headers: { accept: "application/json" } });
      status = res.status;
      text = await readCapped(res, this.maxBytes);
    } catch (err) {
      if (signal.aborted) throw new ApiError("timeout", `Jaeger's query API did not answer within ${this.timeoutMs} ms; retry shortly.`, { cause: err });
      if (err instanceof ApiError) throw err;
      throw new ApiError("unavailable", UNREACHABLE, { cause: err });
    }
    if (status === 404) return undefined;
    if (status !== 200) throw new ApiError("unavailable", UNREACHABLE, { cause: new Error(`GET ${url}: HTTP ${status}: ${text.slice(0, 500)}`) });
    return traceOf(text);
  }
}

async function readCapped(res: Response, maxBytes: number): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw tooLarge(maxBytes);
  if (res.body === null) return "";
  // Node's fetch types the body's chunks loosely; they are bytes.
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError("unavailable", `The trace is over ${maxBytes / (1024 * 1024)} MiB, more than this page shows; read it from Jaeger's query API.`);
}

/** The trace in Jaeger's `{ data: [trace] }`, checked for the fields the view relies on. */
function traceOf(text: string): JaegerTrace | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new ApiError("unavailable", "Jaeger's query API answered something other than JSON.", { cause: err });
  }
  const data = typeof body === "object" && body !== null && "data" in body ? body.data : undefined;
  if (!Array.isArray(data)) throw malformed(text);
  const trace: unknown = data[0];
  if (trace === undefined) return undefined;
  if (!isTrace(trace)) throw malformed(text);
  return trace;
}

function isTrace(t: unknown): t is JaegerTrace {
  if (typeof t !== "object" || t === null) return false;
  const { traceID, spans, processes } = t as Record<string, unknown>;
  return typeof traceID === "string" && Array.isArray(spans) && spans.every(isSpan) && typeof processes === "object" && processes !== null;
}

function isSpan(s: unknown): boolean {
  if (typeof s !== "object" || s === null) return false;
  const { spanID, operationName, startTime, duration, processID } = s as Record<string, unknown>;
  return typeof spanID === "string" && typeof operationName === "string" && typeof startTime === "number" && typeof duration === "number" && typeof processID === "string";
}

function malformed(text: string): ApiError {
  return new ApiError("unavailable", "Jaeger's query API answered JSON that is not a trace.", { cause: new Error(text.slice(0, 500)) });
}
