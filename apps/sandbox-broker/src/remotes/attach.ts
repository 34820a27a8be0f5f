/**
 * A sandbox's ways out, set up at Provision (and, for repositories added later, by
 * AddRepositories) and torn down when it ends: the git relay (its repositories, cloned), and the
 * egress relay (NETWORK_MODE_ALLOWLIST). Both go through remotes the credential proxy opens for
 * this sandbox and session; the broker keeps their capabilities, the sandbox only ever sees its
 * own unix sockets.
 */
import { MhError } from "@metaharness/errors";
import type { GitRepository, RepositoryFailure } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit";
import type { SandboxBrokerConfig } from "../config.js";
import type { LocalSandbox } from "../driver/local-sandbox.js";
import type { SandboxSpec } from "../resources.js";
import { cloneRepositories } from "./clone.js";
import { startEgress } from "./egress.js";
import { startGitRelay } from "./git-relay.js";
import type { ProxyConnection } from "./proxy-client.js";
import { normalizeRepositoryUrl } from "./repository-url.js";

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
  if (spec.repositories.length === 0 && spec.allowedHosts.length === 0) return undefined;
  if (ctx.proxy === undefined) {
    if (spec.repositories.length > 0) throw noGit();
    throw new MhError("FAILED_PRECONDITION", "resources.network.mode: ALLOWLIST needs the credential proxy, which this broker has not (MH_CREDENTIAL_PROXY_ADDR)", {
      field: "resources.network.mode",
    });
  }
  const remotes = new SandboxRemotes(ctx, ctx.proxy, sandbox, ids, spec.limits.lifetimeSeconds);
  try {
    const repositoryFailures = spec.repositories.length > 0 ? (await remotes.addRepositories(spec.repositories)).failures : [];
    if (spec.allowedHosts.length > 0) await remotes.openEgress(spec.allowedHosts);
    return { remotes, repositoryFailures };
  } catch (err) {
    await remotes.detach();
    throw err;
  }
}

function noGit(): MhError {
  return new MhError("UNIMPLEMENTED", "resources.repositories: git repositories are not enabled on this broker (it has no MH_CREDENTIAL_PROXY_ADDR)", {
    field: "resources.repositories",
  });
}

/** The remotes of one running sandbox; more repositories can be added while it runs. */
export class SandboxRemotes {
  private readonly closers: Detach[] = [];
  /** Normalised repository URL -> the proxy's remote for it; the git relay reads it per request. */
  private readonly gitRemotes = new Map<string, string>();
  private relayStarted = false;
  /** Mount path -> URL of every repository tried in this sandbox (cloned or failed). */
  private readonly tried = new Map<string, string>();
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
    if (ctx.proxy === undefined) throw noGit();
    return new SandboxRemotes(ctx, ctx.proxy, sandbox, ids, lifetimeSeconds);
  }

  /** Clones the repositories not tried here yet (by mount path); returns those cloned and those that failed. */
  async addRepositories(repositories: readonly GitRepository[]): Promise<{ added: GitRepository[]; failures: RepositoryFailure[] }> {
    const fresh = repositories.filter((r) => this.tried.get(r.mountPath) !== r.url);
    if (fresh.length === 0) return { added: [], failures: [] };
    for (const r of fresh) this.tried.set(r.mountPath, r.url);
    const urls = [...new Set(fresh.map((r) => normalizeRepositoryUrl(r.url) ?? r.url))].filter((u) => !this.gitRemotes.has(u));
    if (urls.length > 0) {
      const { remotes } = await this.proxy.client.openGitRemote({ ...this.ids, repositoryUrls: urls, ttlSeconds: this.lifetimeSeconds });
      for (const u of urls) if (remotes[u] !== undefined) this.gitRemotes.set(u, remotes[u]);
    }
    if (!this.relayStarted) {
      const relay = await startGitRelay({ runDir: this.sandbox.runDir, remotes: this.gitRemotes, serviceAuthorization: this.proxy.serviceAuthorization, ...this.limits() });
      this.relayStarted = true;
      this.closers.push(() => relay.close());
    }
    const started = performance.now();
    const failures = await cloneRepositories(this.sandbox, fresh, this.ctx.config.gitCloneTimeoutMs);
    for (const f of failures) this.log.warn({ repository: f.url, kind: f.kind, error: f.message }, "a repository did not clone; the sandbox goes on without it");
    const failed = new Set(failures.map((f) => f.mountPath));
    const added = fresh.filter((r) => !failed.has(r.mountPath));
    this.log.info({ repositories: fresh.map((r) => r.url), failed: failures.length, duration_ms: Math.round(performance.now() - started) }, "repositories cloned");
    return { added, failures };
  }

  async openEgress(allowedHosts: readonly string[]): Promise<void> {
    const egress = await startEgress(this.sandbox, this.proxy, { ...this.ids, allowedHosts: [...allowedHosts], ttlSeconds: this.lifetimeSeconds }, this.limits());
    this.closers.push(() => egress.close());
  }

  async detach(): Promise<void> {
    for (const close of this.closers.splice(0).reverse()) await close().catch((err: unknown) => this.log.warn({ err }, "could not close a sandbox remote"));
  }

  private limits(): { maxRequestBytes: number; maxConnections: number; logger: Logger } {
    return { maxRequestBytes: this.ctx.config.remoteMaxRequestBytes, maxConnections: this.ctx.config.remoteMaxConnections, logger: this.log };
  }
}
