/**
 * The real Jaeger that infra/jaeger/up.sh starts: where to export spans (OTLP/HTTP), and a small
 * client of its query API (`/api/services`, `/api/traces`, the JSON the Jaeger UI reads) to find
 * what arrived. Also the UI links a person would open for a trace or a session.
 */
import { startTelemetry, type Telemetry } from "@metaharness/telemetry";
import { eventually } from "./eventually.js";

export const OTLP_ENDPOINT = process.env["MH_OTLP_ENDPOINT"] ?? "http://127.0.0.1:4318";
export const JAEGER_QUERY_URL = (process.env["MH_JAEGER_QUERY_URL"] ?? "http://127.0.0.1:16686").replace(/\/+$/, "");

/** One request to the query API may take this long. */
const REQUEST_TIMEOUT_MS = 3_000;

export interface JaegerTag {
  readonly key: string;
  readonly type: string;
  readonly value: unknown;
}

export interface JaegerSpan {
  readonly traceID: string;
  readonly spanID: string;
  readonly operationName: string;
  readonly references: ReadonlyArray<{ readonly refType: string; readonly traceID: string; readonly spanID: string }>;
  readonly startTime: number;
  readonly duration: number;
  readonly tags: readonly JaegerTag[];
  readonly processID: string;
}

export interface JaegerTrace {
  readonly traceID: string;
  readonly spans: readonly JaegerSpan[];
  readonly processes: Readonly<Record<string, { readonly serviceName: string }>>;
}

export interface TraceQuery {
  readonly service: string;
  readonly operation?: string;
  /** Span tags that must all match, e.g. `{ "mh.session_id": id }`. */
  readonly tags?: Record<string, string>;
  /** Earliest span start; the last hour by default. */
  readonly since?: Date;
  readonly limit?: number;
}

export function tagOf(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}

export function serviceOf(trace: JaegerTrace, span: JaegerSpan): string | undefined {
  return trace.processes[span.processID]?.serviceName;
}

/** Spans whose CHILD_OF reference names `parent`. */
export function childrenOf(trace: JaegerTrace, parent: JaegerSpan): JaegerSpan[] {
  return trace.spans.filter((s) => s.references.some((r) => r.refType === "CHILD_OF" && r.spanID === parent.spanID));
}

/** The UI page of one trace. */
export function traceUrl(traceId: string, base = JAEGER_QUERY_URL): string {
  return `${base}/trace/${traceId}`;
}

/** The UI search for a session's traces of one service (e.g. every harness step of the session). */
export function sessionSearchUrl(service: string, sessionId: string, base = JAEGER_QUERY_URL): string {
  const q = new URLSearchParams({ service, tags: JSON.stringify({ "mh.session_id": sessionId }), limit: "100" });
  return `${base}/search?${q.toString()}`;
}

/**
 * Why Jaeger cannot be used, or undefined when its query API answers. A quick probe (one request),
 * for a test to skip or fail with a clear message.
 */
export async function jaegerUnavailable(base = JAEGER_QUERY_URL): Promise<string | undefined> {
  try {
    await getJson(`${base}/api/services`);
    return undefined;
  } catch (err) {
    return `Jaeger's query API does not answer at ${base}/api/services (${describe(err)}): start it with MH_WITH_JAEGER=1 infra/up.sh (or infra/jaeger/up.sh)`;
  }
}

/**
 * For a test file's beforeAll: why its tests must be skipped (Jaeger does not answer), or
 * undefined when they can run. With MH_REQUIRE_JAEGER=1 a missing Jaeger is an error instead.
 */
export async function jaegerSkipReason(): Promise<string | undefined> {
  const unavailable = await jaegerUnavailable();
  if (unavailable === undefined) return undefined;
  if (process.env["MH_REQUIRE_JAEGER"] === "1") throw new Error(`MH_REQUIRE_JAEGER=1: ${unavailable}`);
  return `${unavailable} (set MH_REQUIRE_JAEGER=1 to fail instead)`;
}

/**
 * This process's telemetry, exporting to Jaeger under `serviceName` (unique per run, so nothing
 * else in Jaeger's memory matches). Fails when telemetry already runs under another name.
 */
export function exportToJaeger(serviceName: string): Telemetry {
  const telemetry = startTelemetry({ serviceName, otlpEndpoint: OTLP_ENDPOINT });
  if (telemetry.serviceName !== serviceName) throw new Error(`telemetry was already started in this process as ${telemetry.serviceName}`);
  return telemetry;
}

/** Traces matching `q` (the query API's search, the one the UI's search page uses). */
export async function findTraces(q: TraceQuery, base = JAEGER_QUERY_URL): Promise<JaegerTrace[]> {
  const params = new URLSearchParams({
    service: q.service,
    start: String((q.since ?? new Date(Date.now() - 3_600_000)).getTime() * 1000),
    end: String((Date.now() + 60_000) * 1000),
    limit: String(q.limit ?? 20),
  });
  if (q.operation !== undefined) params.set("operation", q.operation);
  if (q.tags !== undefined) params.set("tags", JSON.stringify(q.tags));
  const body = await getJson(`${base}/api/traces?${params.toString()}`);
  return dataOf<JaegerTrace[]>(body);
}

/** One whole trace by id. */
export async function getTrace(traceId: string, base = JAEGER_QUERY_URL): Promise<JaegerTrace> {
  const traces = dataOf<JaegerTrace[]>(await getJson(`${base}/api/traces/${traceId}`));
  const trace = traces[0];
  if (trace === undefined) throw new Error(`Jaeger returned no trace for ${traceId}`);
  return trace;
}

/**
 * Polls `find` until `until` holds for its answer or `timeoutMs` passes (spans arrive as the
 * exporter flushes; Jaeger stores them when it answers the export, so this is normally one round).
 */
export async function waitForTraces(
  find: () => Promise<JaegerTrace[]>,
  until: (traces: JaegerTrace[]) => boolean,
  timeoutMs = 10_000,
): Promise<JaegerTrace[]> {
  let seen: JaegerTrace[] = [];
  return eventually(
    async () => {
      seen = await find();
      return until(seen) ? seen : undefined;
    },
    () => `traces (${timeoutMs} ms); traces found:\n${seen.map((t) => `${t.traceID}: ${t.spans.map((s) => s.operationName).join(", ")}`).join("\n") || "(none)"}`,
    timeoutMs,
  );
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as unknown;
}

function dataOf<T>(body: unknown): T {
  if (typeof body !== "object" || body === null || !("data" in body)) {
    throw new Error(`unexpected answer from Jaeger: ${JSON.stringify(body).slice(0, 500)}`);
  }
  return (body as { data: T }).data;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}
