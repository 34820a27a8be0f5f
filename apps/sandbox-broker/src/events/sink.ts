/**
 * The broker's link to the session log. It reports what happens to sandboxes: sandbox.provisioned / released / lost in
 * the owning session's log, and a repository that did not clone as a session.error of type
 * repository_*_error (retrying: the session goes on without it). Behind this small interface so the broker runs without a session log
 * (NO_EVENTS) and tests can point it at a real one in-process. Reporting never blocks or fails a
 * sandbox operation: events queue (bounded) and go out in order, with retries. It also tells
 * whether a session has ended, so the sandboxes of a deleted session do not wait for their idle
 * timeout (SessionEnds).
 */
import { createHash } from "node:crypto";
import { MhError, isRetryableError, retry, retryPolicy } from "@metaharness/errors";
import { newEvent, type RepositoryErrorType } from "@metaharness/events";
import {
  RepositoryFailureKind,
  RetryStatus,
  SessionLogClient,
  SessionStatus,
  SessionLogService,
  type Event,
  type RepositoryFailure,
} from "@metaharness/proto";
import type { ChannelCredentials } from "@grpc/grpc-js";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import type { Logger } from "@metaharness/service-kit/logging";

export interface SandboxEventSink {
  provisioned(sessionId: string, sandboxId: string, driver: string, durationMs: number): void;
  released(sessionId: string, sandboxId: string, reason: string): void;
  lost(sessionId: string, sandboxId: string, reason: string): void;
  /** A repository that did not clone into the sandbox (reported once per sandbox and repository). */
  repositoryFailed(sessionId: string, sandboxId: string, failure: RepositoryFailure): void;
  /**
   * Whether the session has ended: terminated (as a deleted session is) or unknown to the log.
   * Undefined when the log cannot say now (unreachable), or there is no log.
   */
  sessionEnded(sessionId: string): Promise<boolean | undefined>;
  /** Sends what is queued (up to `timeoutMs`) and stops. */
  close(timeoutMs: number): Promise<void>;
}

export const NO_EVENTS: SandboxEventSink = {
  provisioned: () => undefined,
  released: () => undefined,
  lost: () => undefined,
  repositoryFailed: () => undefined,
  sessionEnded: () => Promise.resolve(undefined),
  close: () => Promise.resolve(),
};

const REPOSITORY_ERROR_TYPE: Record<RepositoryFailureKind, RepositoryErrorType> = {
  [RepositoryFailureKind.REPOSITORY_FAILURE_KIND_AUTHENTICATION]: "repository_authentication_error",
  [RepositoryFailureKind.REPOSITORY_FAILURE_KIND_FORBIDDEN]: "repository_forbidden_error",
  [RepositoryFailureKind.REPOSITORY_FAILURE_KIND_NOT_FOUND]: "repository_not_found_error",
  [RepositoryFailureKind.REPOSITORY_FAILURE_KIND_CHECKOUT]: "repository_checkout_error",
  [RepositoryFailureKind.REPOSITORY_FAILURE_KIND_CLONE]: "repository_clone_error",
  [RepositoryFailureKind.REPOSITORY_FAILURE_KIND_UNSPECIFIED]: "repository_clone_error",
  [RepositoryFailureKind.UNRECOGNIZED]: "repository_clone_error",
};

/** The session.error a repository failure is reported as. */
export function repositoryErrorEvent(sessionId: string, sandboxId: string, failure: RepositoryFailure): Event {
  const error = {
    type: REPOSITORY_ERROR_TYPE[failure.kind],
    message: failure.message,
    retryStatus: RetryStatus.RETRY_STATUS_RETRYING,
    repositoryUrl: failure.url,
  };
  // One per sandbox, repository and kind: a retried append, or a retried clone failing the same
  // way again, is a duplicate, not a second error.
  const key = createHash("sha256").update(`${failure.mountPath}\0${failure.url}\0${failure.kind}`).digest("hex").slice(0, 16);
  return newEvent("session.error", { error }, { id: `${sandboxId}:repository:${key}`, sessionId });
}

/** Queued events beyond this are dropped (and counted in one log line). */
export const MAX_QUEUED_EVENTS = 10_000;
/** An append the log could not take is sent again: 5 attempts over about 4 s (waits 100 ms, then x3 up to 3 s). */
const SEND_POLICY = retryPolicy({ initialIntervalMs: 100, multiplier: 3, maxIntervalMs: 3_000, maxAttempts: 5 });

/**
 * Event ids are derived from the sandbox ("sbx_...:lost"), so a retried append is a duplicate
 * the log recognises, never a second event.
 */
export class SessionLogSink implements SandboxEventSink {
  private readonly queue: Array<{ sessionId: string; event: Event }> = [];
  private readonly client;
  private readonly raw: SessionLogClient;
  private draining: Promise<void> | undefined;
  private dropped = 0;
  private closed = false;
  /** Warned once: a log older than this broker may refuse it GetSession. */
  private mayNotRead = false;

  constructor(
    address: string,
    /** This broker's service token for the log, and the channel's credentials (TLS or not). */
    link: { readonly token: string; readonly credentials: ChannelCredentials },
    private readonly logger: Logger,
  ) {
    this.raw = createClient(SessionLogClient, address, { bearerToken: link.token, credentials: link.credentials });
    this.client = promisify(this.raw, SessionLogService);
  }

  provisioned(sessionId: string, sandboxId: string, driver: string, durationMs: number): void {
    const event = newEvent("sandbox.provisioned", { sandboxId, driver, durationMs }, { id: `${sandboxId}:provisioned`, sessionId });
    this.enqueue(sessionId, event);
  }

  released(sessionId: string, sandboxId: string, reason: string): void {
    this.enqueue(sessionId, newEvent("sandbox.released", { sandboxId, reason }, { id: `${sandboxId}:released`, sessionId }));
  }

  lost(sessionId: string, sandboxId: string, reason: string): void {
    this.enqueue(sessionId, newEvent("sandbox.lost", { sandboxId, reason }, { id: `${sandboxId}:lost`, sessionId }));
  }

  repositoryFailed(sessionId: string, sandboxId: string, failure: RepositoryFailure): void {
    this.enqueue(sessionId, repositoryErrorEvent(sessionId, sandboxId, failure));
  }

  async sessionEnded(sessionId: string): Promise<boolean | undefined> {
    try {
      const { session } = await this.client.getSession({ sessionId }, { deadlineMs: 5_000 });
      return session?.status === SessionStatus.SESSION_STATUS_TERMINATED;
    } catch (err) {
      const code = MhError.from(err).code;
      if (code === "PERMISSION_DENIED" && !this.mayNotRead) {
        this.mayNotRead = true;
        this.logger.warn("the session log does not let this broker read sessions (role broker needs GetSession): sandboxes of ended sessions wait for their idle timeout");
      }
      return code === "NOT_FOUND" ? true : undefined;
    }
  }

  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    const timer = new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref());
    await Promise.race([this.draining ?? Promise.resolve(), timer]);
    if (this.queue.length > 0) this.logger.warn({ unsent: this.queue.length }, "sandbox events not sent before shutdown");
    this.raw.close();
  }

  private enqueue(sessionId: string, event: Event): void {
    if (sessionId === "") return; // a pooled sandbox that no session holds yet
    if (this.queue.length >= MAX_QUEUED_EVENTS) {
      if (this.dropped++ === 0) this.logger.warn({ limit: MAX_QUEUED_EVENTS }, "sandbox event queue full: dropping events");
      return;
    }
    this.queue.push({ sessionId, event });
    this.kick();
  }

  private kick(): void {
    if (this.draining !== undefined) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.queue.length > 0) this.kick(); // queued between the last send and this callback
    });
  }

  private async drain(): Promise<void> {
    for (let item = this.queue.shift(); item !== undefined; item = this.queue.shift()) {
      await this.send(item.sessionId, item.event);
    }
    if (this.dropped > 0) {
      this.logger.warn({ dropped: this.dropped }, "sandbox events were dropped while the queue was full");
      this.dropped = 0;
    }
  }

  private async send(sessionId: string, event: Event): Promise<void> {
    const log = this.logger.child({ session_id: sessionId, event_id: event.id, type: event.type });
    try {
      await retry(SEND_POLICY, () => this.client.emitEvent({ sessionId, event, expectedSeq: undefined, leaseEpoch: undefined }, { deadlineMs: 5_000 }), {
        isRetryable: (err) => !this.closed && isRetryableError(err, SEND_POLICY),
      });
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "FAILED_PRECONDITION" && e.field === "session_id") {
        // The session was terminated (deleted): its log takes nothing more, and needs nothing.
        log.debug("session terminated: sandbox event not recorded");
        return;
      }
      log.warn({ code: e.code, error: e.message }, "could not record a sandbox event in the session log");
    }
  }
}
