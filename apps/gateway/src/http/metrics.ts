/**
 * The gateway's metrics (their meaning: docs/operations.md), as fastify hooks: every request's
 * duration by method, route template (`/v1/sessions/:session_id`, never the path's ids; an
 * unknown path counts as `(no route)`) and status, and the event streams (SSE) open now. An event
 * stream hijacks its reply, which then never reaches onResponse: it is counted when it closes.
 */
import type { ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import { METRICS, histogram, secondsSince, upDownCounter } from "@metaharness/telemetry";

const duration = histogram(METRICS.httpDuration);
const streams = upDownCounter(METRICS.sseStreams);

interface Started {
  readonly method: string;
  readonly route: string;
  readonly at: number;
}

const started = new WeakMap<ServerResponse, Started>();

export function measureRequests(app: FastifyInstance): void {
  app.addHook("onRequest", (req, reply, done) => {
    started.set(reply.raw, { method: req.method, route: req.routeOptions.url ?? "(no route)", at: performance.now() });
    done();
  });
  app.addHook("onResponse", (_req, reply, done) => {
    const s = started.get(reply.raw);
    if (s !== undefined) record(s, reply.statusCode);
    done();
  });
}

/** An event stream opened on `res`: open until it closes, then counted as its request. */
export function streamOpened(res: ServerResponse): void {
  streams.add(1);
  res.once("close", () => {
    streams.add(-1);
    const s = started.get(res);
    if (s !== undefined) record(s, res.statusCode);
  });
}

function record(s: Started, status: number): void {
  duration.record(secondsSince(s.at), { "http.request.method": s.method, "http.route": s.route, "http.response.status_code": status });
}
