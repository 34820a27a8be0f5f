/**
 * A sandbox's ways out, set up at Provision (and, for repositories added later, by
 * AddRepositories) and torn down when it ends: the git relay (its repositories, cloned), and the
 * egress relay (NETWORK_MODE_ALLOWLIST, NETWORK_MODE_UNRESTRICTED). Both go through remotes the credential proxy opens for
 * this sandbox and session; the broker keeps their capabilities, the sandbox only ever sees its
 * own unix sockets.
 */
import { MhError, backoffMs, retryPolicy, type RetryPolicy } from "@metaharness/errors";
import type { GitRepository, RepositoryFailure } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import type { SandboxBrokerConfig } from "../config.js";
import type { LocalSandbox } from "../driver/local-sandbox.js";
import type { EgressScope, SandboxSpec } from "../resources.js";
import { cloneRepositories } from "./clone.js";
import { startEgress } from "./egress.js";
import { startGitRelay } from "./git-relay.js";
import type { ProxyConnection } from "./proxy-client.js";
import { normalizeRepositoryUrl } from "@metaharness/events";

export type Detach = () => Promise<void>;

export interface AttachContext {
  readonly config: SandboxBrokerConfig;
  readonly proxy: ProxyConnection | undefined;
  readonly logger: Logger;
}

export interface Attached {
  readonly remotes: SandboxRemotes;
  /** Repositories that did not clone or check out: the sandbox goes on without them. */
  readonly repositoryFailures: RepositoryFailure[];
}

/** Opens the sandbox's remotes; undefined when it has none. On failure nothing stays open. */
export async function attachRemotes(
  ctx: AttachContext,
  sandbox: LocalSandbox,
  ids: { sessionId: string; sandboxId: string },
  spec: SandboxSpec,
): Promise<Attached | undefined> {
  if (spec.repositories.length === 0 && spec.egress === undefined) return undefined;
  if (ctx.proxy === undefined) {
    if (spec.repositories.length > 0) throw noGit();
    throw new MhError("FAILED_PRECONDITION", "resources.network.mode: egress needs the credential proxy, which this broker has not (MH_CREDENTIAL_PROXY_ADDR)", {
      field: "resources.network.mode",
    });
  }
  const remotes = new SandboxRemotes(ctx, ctx.proxy, sandbox, ids, spec.limits.lifetimeSeconds);
  try {
    const repositoryFailures = spec.repositories.length > 0 ? (await remotes.addRepositories(spec.repositories)).failures : [];
    if (spec.egress !== undefined) await remotes.openEgress(spec.egress);
    return { remotes, repositoryFailures };
  } catch (err) {
    await remotes.detach();
    throw err;
  }
}

function noGit(field = "resources.repositories"): MhError {
  return new MhError("UNIMPLEMENTED", `${field}: git repositories are not enabled on this broker (it has no MH_CREDENTIAL_PROXY_ADDR)`, { field });
}

type CloneResult = { readonly ok: true } | { readonly ok: false; readonly failure: RepositoryFailure };

interface Attempt {
  readonly url: string;
  readonly outcome: Promise<CloneResult>;
  /** Failed attempts at this mount path in a row, this one included once it failed. */
  failures: number;
  /** When a failed attempt may be made again (epoch ms); undefined while running or once cloned. */
  retryAt: number | undefined;
}

/**
 * A failed clone is tried again once `retryMs` (MH_REPOSITORY_RETRY_MS) has passed, then twice that
 * after each further failure, up to 32 times it; no jitter: the next tool call asks, not a timer.
 */
function cloneRetryPolicy(retryMs: number): RetryPolicy {
  return retryPolicy({ initialIntervalMs: retryMs, maxIntervalMs: retryMs * 32, multiplier: 2, jitter: 0, maxAttempts: Number.POSITIVE_INFINITY });
}

/** The remotes of one running sandbox; more repositories can be added while it runs. */
export class SandboxRemotes {
  private readonly closers: Detach[] = [];
  /** Normalised repository URL -> the proxy's remote for it; the git relay reads it per request. */
  private readonly gitRemotes = new Map<string, string>();
  private relay: Promise<void> | undefined;
  /**
   * Mount path -> the repository tried there and how it went (a clone still running is a pending
   * promise: a concurrent caller waits for it). An attempt that could not even start (the proxy
   * or the relay failed) is dropped, so the next call tries again. One that failed is tried again
   * once its `retryAt` has passed.
   */
  private readonly tried = new Map<string, Attempt>();
  private closed = false;
  private readonly log: Logger;

  constructor(
    private readonly ctx: AttachContext,
    private readonly proxy: ProxyConnection,
    private readonly sandbox: LocalSandbox,
    private readonly ids: { readonly sessionId: string; readonly sandboxId: string },
    private readonly lifetimeSeconds: number,
  ) {
    this.log = ctx.logger.child({ session_id: ids.sessionId, sandbox_id: ids.sandboxId });
    this.closers.push(async () => void (await proxy.client.closeSandboxRemotes(ids, { deadlineMs: 5_000 })));
  }

  /** For AddRepositories on a sandbox provisioned without remotes. */
  static forSandbox(ctx: AttachContext, sandbox: LocalSandbox, ids: { sessionId: string; sandboxId: string }, lifetimeSeconds: number): SandboxRemotes {
    if (ctx.proxy === undefined) throw noGit("repositories");
    return new SandboxRemotes(ctx, ctx.proxy, sandbox, ids, lifetimeSeconds);
  }

  /**
   * Clones the repositories not tried here yet (by mount path), and those whose last attempt
   * failed long enough ago (MH_REPOSITORY_RETRY_MS, doubling); returns those this call cloned and
   * those that failed. Waits for clones of the same repositories other calls have under way. A
   * retry (of a host that failed before, and may hang again) holds the call at most
   * MH_REPOSITORY_RETRY_WAIT_MS: then the call returns without it, and it goes on cloning for a
   * later call to find.
   */
  async addRepositories(repositories: readonly GitRepository[]): Promise<{ added: GitRepository[]; failures: RepositoryFailure[] }> {
    const now = Date.now();
    const due = (t: Attempt | undefined, url: string): boolean => t === undefined || t.url !== url || (t.retryAt !== undefined && t.retryAt <= now);
    const isRetry = (r: GitRepository): boolean => this.tried.get(r.mountPath)?.url === r.url;
    const todo = repositories.filter((r) => due(this.tried.get(r.mountPath), r.url));
    const underWay = repositories.flatMap((r) => {
      const t = this.tried.get(r.mountPath);
      return t !== undefined && !due(t, r.url) ? [{ outcome: t.outcome, retry: t.failures > 0 }] : [];
    });
    const firsts = todo.filter((r) => !isRetry(r));
    const retries = todo.filter(isRetry);
    const firstRun = this.start(firsts);
    const retryRun = this.start(retries);
    await Promise.all(underWay.map((u) => (u.retry ? this.atMostRetryWait(u.outcome) : u.outcome).catch(() => undefined)));
    const done = [...firsts.map((r, i) => ({ r, at: i, run: firstRun })), ...retries.map((r, i) => ({ r, at: i, run: retryRun }))];
    const [firstResults, retryResults] = await Promise.all([firstRun, this.atMostRetryWait(retryRun)]);
    this.ensureOpen();
    const added: GitRepository[] = [];
    const failures: RepositoryFailure[] = [];
    for (const { r, at, run } of done) {
      const result = (run === firstRun ? firstResults : retryResults)?.[at];
      if (result === undefined) continue; // a retry still cloning
      if (result.ok) added.push(r);
      else failures.push(result.failure);
    }
    return { added, failures };
  }

  /** Starts cloning `group` and records each attempt; resolves to one result per repository. */
  private start(group: readonly GitRepository[]): Promise<CloneResult[]> {
    if (group.length === 0) return Promise.resolve([]);
    const run = this.cloneFresh(group);
    group.forEach((r, i) => {
      const before = this.tried.get(r.mountPath);
      const outcome = run.then((results) => results[i] ?? { ok: true as const });
      const attempt: Attempt = { url: r.url, outcome, failures: before?.url === r.url ? before.failures : 0, retryAt: undefined };
      this.tried.set(r.mountPath, attempt);
      outcome.then(
        (result) => {
          if (result.ok) {
            attempt.failures = 0;
            return;
          }
          attempt.failures += 1;
          attempt.retryAt = Date.now() + backoffMs(cloneRetryPolicy(this.ctx.config.repositoryRetryMs), attempt.failures);
        },
        // Could not start (proxy, relay): forget the attempt, so a later call tries again.
        () => {
          if (this.tried.get(r.mountPath) === attempt) this.tried.delete(r.mountPath);
        },
      );
    });
    return run;
  }

  /** `work`'s result, or undefined once MH_REPOSITORY_RETRY_WAIT_MS has passed (it goes on). */
  private async atMostRetryWait<T>(work: Promise<T>): Promise<T | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), this.ctx.config.repositoryRetryWaitMs)));
    try {
      return await Promise.race([work, waited]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async cloneFresh(fresh: readonly GitRepository[]): Promise<CloneResult[]> {
    const urls = [...new Set(fresh.map((r) => normalizeRepositoryUrl(r.url) ?? r.url))].filter((u) => !this.gitRemotes.has(u));
    if (urls.length > 0) {
      this.ensureOpen();
      const { remotes } = await this.proxy.client.openGitRemote({ ...this.ids, repositoryUrls: urls, ttlSeconds: this.lifetimeSeconds });
      if (this.closed) {
        // The sandbox ended meanwhile: what was just opened must not outlive it.
        await this.proxy.client.closeSandboxRemotes(this.ids, { deadlineMs: 5_000 }).catch(() => undefined);
        this.ensureOpen();
      }
      for (const u of urls) if (remotes[u] !== undefined) this.gitRemotes.set(u, remotes[u]);
    }
    this.relay ??= this.startRelay();
    await this.relay;
    this.ensureOpen();
    const started = performance.now();
    const failures = await cloneRepositories(this.sandbox, fresh, this.ctx.config.gitCloneTimeoutMs);
    // A clone cut short by the sandbox ending is not a repository failure to report.
    this.ensureOpen();
    for (const f of failures) this.log.warn({ repository: f.url, kind: f.kind, error: f.message }, "a repository did not clone; the sandbox goes on without it");
    this.log.info({ repositories: fresh.map((r) => r.url), failed: failures.length, duration_ms: Math.round(performance.now() - started) }, "repositories cloned");
    const byMount = new Map(failures.map((f) => [f.mountPath, f]));
    return fresh.map((r) => {
      const failure = byMount.get(r.mountPath);
      return failure === undefined ? { ok: true } : { ok: false, failure };
    });
  }

  private async startRelay(): Promise<void> {
    try {
      const relay = await startGitRelay({ runDir: this.sandbox.runDir, guard: this.sandbox.socketGuard, remotes: this.gitRemotes, serviceAuthorization: this.proxy.serviceAuthorization, tls: this.proxy.tls, ...this.limits() });
      if (this.closed) {
        await relay.close();
        return;
      }
      this.closers.push(() => relay.close());
    } catch (err) {
      this.relay = undefined; // the next call tries again
      throw err;
    }
  }

  async openEgress(scope: EgressScope): Promise<void> {
    const egress = await startEgress(this.sandbox, this.proxy, { ...this.ids, scope, ttlSeconds: this.lifetimeSeconds }, this.limits());
    this.closers.push(() => egress.close());
  }

  /** Closes everything; calls still adding repositories then fail, and report nothing. */
  async detach(): Promise<void> {
    this.closed = true;
    for (const close of this.closers.splice(0).reverse()) await close().catch((err: unknown) => this.log.warn({ err }, "could not close a sandbox remote"));
  }

  private ensureOpen(): void {
    if (this.closed) throw new MhError("FAILED_PRECONDITION", `sandbox ${this.ids.sandboxId} ended while its repositories were being added`, { field: "sandbox_id" });
  }

  private limits(): { maxRequestBytes: number; maxConnections: number; logger: Logger } {
    return { maxRequestBytes: this.ctx.config.remoteMaxRequestBytes, maxConnections: this.ctx.config.remoteMaxConnections, logger: this.log };
  }
}
