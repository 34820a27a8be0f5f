/**
 * The SDK endpoints this gateway does not serve yet answer 501 with a body saying so, instead
 * of a 404 that would read as "no such object": session threads, and the self-hosted environment
 * work queue (the EnvironmentWorker protocol).
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
const WORK = "Self-hosted environment work (EnvironmentWorker) is not served by this gateway yet.";

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
  [
    WORK,
    [
      { method: "GET", url: "/v1/environments/:environment_id/work", sdk: "beta.environments.work.list" },
      { method: "GET", url: "/v1/environments/:environment_id/work/poll", sdk: "beta.environments.work.poll" },
      { method: "GET", url: "/v1/environments/:environment_id/work/stats", sdk: "beta.environments.work.stats" },
      { method: "GET", url: "/v1/environments/:environment_id/work/:work_id", sdk: "beta.environments.work.retrieve" },
      { method: "POST", url: "/v1/environments/:environment_id/work/:work_id", sdk: "beta.environments.work.update" },
      { method: "POST", url: "/v1/environments/:environment_id/work/:work_id/ack", sdk: "beta.environments.work.ack" },
      { method: "POST", url: "/v1/environments/:environment_id/work/:work_id/heartbeat", sdk: "beta.environments.work.heartbeat" },
      { method: "POST", url: "/v1/environments/:environment_id/work/:work_id/stop", sdk: "beta.environments.work.stop" },
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
