/**
 * The credential vault proxy's metrics (their meaning: docs/operations.md): every request it
 * serves, by kind (mcp: a harness's MCP call; git: a sandbox's git remote; egress: a sandbox's
 * HTTP(S) egress) and outcome, and its own refusals by a closed reason: what the proxy itself
 * answered, never an upstream's status, which it only relays.
 */
import type { ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { MhError } from "@metaharness/errors";
import { METRICS, counter } from "@metaharness/telemetry";

export type ProxyKind = "mcp" | "git" | "egress";

const requests = counter(METRICS.proxyRequests);
const refusals = counter(METRICS.proxyRefusals);
/** Responses and tunnels the proxy refused itself, so their request counts as refused. */
const refused = new WeakSet<object>();

/** The kind of a request to the remote endpoint: absolute-form and CONNECT are egress. */
export function remoteKind(url: string | undefined, method: string | undefined): ProxyKind {
  return method === "CONNECT" || /^https?:\/\//i.test(url ?? "") ? "egress" : "git";
}

/** A closed reason for the proxy's own 4xx answer. */
function reasonOf(status: number): string {
  switch (status) {
    case 400: return "bad_request";
    case 401:
    case 407: return "no_service_token";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "too_large";
    case 429: return "rate_limited";
    default: return "other";
  }
}

/** The proxy answered `status` itself (on a response or a CONNECT socket): a 4xx is a refusal. */
export function answeredItself(target: ServerResponse | Duplex, kind: ProxyKind, status: number): void {
  if (status < 400 || status >= 500) return;
  refused.add(target);
  refusals.add(1, { kind, reason: reasonOf(status) });
}

/** Counts a request of the remote endpoint once its response is finished. */
export function countResponse(res: ServerResponse, kind: ProxyKind): void {
  res.once("close", () => requests.add(1, { kind, outcome: refused.has(res) ? "refused" : res.statusCode >= 500 ? "error" : "ok" }));
}

/** Counts a CONNECT tunnel once its handling is over. */
export function countTunnel(socket: Duplex, failed: boolean): void {
  requests.add(1, { kind: "egress", outcome: refused.has(socket) ? "refused" : failed ? "error" : "ok" });
}

const REFUSING_CODES = new Set(["INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "UNAUTHENTICATED", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED"]);

/** Counts an MCP call: `err` when it failed (a refusal when the proxy refused it, by its code). */
export function countMcpCall(err?: unknown): void {
  if (err === undefined) {
    requests.add(1, { kind: "mcp", outcome: "ok" });
    return;
  }
  const code = MhError.from(err).code;
  if (REFUSING_CODES.has(code)) {
    refusals.add(1, { kind: "mcp", reason: code.toLowerCase() });
    requests.add(1, { kind: "mcp", outcome: "refused" });
  } else {
    requests.add(1, { kind: "mcp", outcome: "error" });
  }
}
