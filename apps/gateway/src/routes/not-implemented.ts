/**
 * The SDK endpoints this gateway does not serve yet answer 501 with a body saying so, instead
 * of a 404 that would read as "no such object": session threads.
 */
import type { Method } from "../http/router.js";
import { ApiError } from "../errors/api-error.js";
import type { RouteContext } from "./context.js";

interface Unserved {
  readonly method: Method;
  readonly url: string;
  readonly sdk: string;
}

const THREADS = "Session threads (multiagent sessions) are not supported by Meta-Harness yet.";

const UNSERVED: ReadonlyArray<readonly [string, readonly Unserved[]]> = [
  [
    THREADS,
    [
      { method: "GET", url: "/v1/sessions/:session_id/threads", sdk: "beta.sessions.threads.list" },
      { method: "GET", url: "/v1/sessions/:session_id/threads/:thread_id", sdk: "beta.sessions.threads.retrieve" },
      { method: "POST", url: "/v1/sessions/:session_id/threads/:thread_id/archive", sdk: "beta.sessions.threads.archive" },
      { method: "GET", url: "/v1/sessions/:session_id/threads/:thread_id/events", sdk: "beta.sessions.threads.events.list" },
      { method: "GET", url: "/v1/sessions/:session_id/threads/:thread_id/stream", sdk: "beta.sessions.threads.events.stream" },
    ],
  ],
];

export function registerNotImplementedRoutes(ctx: RouteContext): void {
  for (const [message, routes] of UNSERVED) {
    for (const r of routes) {
      ctx.router.add(
        { ...r, summary: `Not yet available: ${message}`, response: "(none)", errors: ["not_implemented"] },
        () => Promise.reject(new ApiError("not_implemented", message)),
      );
    }
  }
}
