/**
 * A sandbox's ways out, set up at Provision and torn down when it ends: the git relay (its
 * repositories, cloned), and the egress relay (NETWORK_MODE_ALLOWLIST). Both go through remotes
 * the credential proxy opens for this sandbox and session; the broker keeps their capabilities,
 * the sandbox only ever sees its own unix sockets.
 */
import { MhError } from "@metaharness/errors";
import type { RepositoryFailure } from "@metaharness/proto";
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

export interface Attached {
  readonly detach: Detach;
  /** Repositories that did not clone or check out: the sandbox goes on without them. */
  readonly repositoryFailures: RepositoryFailure[];
}

export interface AttachContext {
  readonly config: SandboxBrokerConfig;
  readonly proxy: ProxyConnection | undefined;
  readonly logger: Logger;
}

/** Opens the sandbox's remotes; undefined when it has none. On failure nothing stays open. */
export async function attachRemotes(
  ctx: AttachContext,
  sandbox: LocalSandbox,
  ids: { sessionId: string; sandboxId: string },
  spec: SandboxSpec,
): Promise<Attached | undefined> {
  if (spec.repositories.length === 0 && spec.allowedHosts.length === 0) return undefined;
  const { proxy, config } = ctx;
  if (proxy === undefined) {
    if (spec.repositories.length > 0) {
      throw new MhError("UNIMPLEMENTED", "resources.repositories: git repositories are not enabled on this broker (it has no MH_CREDENTIAL_PROXY_ADDR)", {
        field: "resources.repositories",
      });
    }
    throw new MhError("FAILED_PRECONDITION", "resources.network.mode: ALLOWLIST needs the credential proxy, which this broker has not (MH_CREDENTIAL_PROXY_ADDR)", {
      field: "resources.network.mode",
    });
  }
  const log = ctx.logger.child({ session_id: ids.sessionId, sandbox_id: ids.sandboxId });
  const closers: Detach[] = [async () => void (await proxy.client.closeSandboxRemotes(ids, { deadlineMs: 5_000 }))];
  const detach: Detach = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch((err: unknown) => log.warn({ err }, "could not close a sandbox remote"));
  };
  const limits = { maxRequestBytes: config.remoteMaxRequestBytes, maxConnections: config.remoteMaxConnections, logger: log };
  let repositoryFailures: RepositoryFailure[] = [];
  try {
    if (spec.repositories.length > 0) {
      const urls = [...new Set(spec.repositories.map((r) => normalizeRepositoryUrl(r.url) ?? r.url))];
      const { remotes } = await proxy.client.openGitRemote({ ...ids, repositoryUrls: urls, ttlSeconds: spec.limits.lifetimeSeconds });
      const map = new Map(urls.flatMap((u) => (remotes[u] === undefined ? [] : [[u, remotes[u]] as const])));
      const relay = await startGitRelay({ runDir: sandbox.runDir, remotes: map, serviceAuthorization: proxy.serviceAuthorization, ...limits });
      closers.push(() => relay.close());
      const started = performance.now();
      repositoryFailures = await cloneRepositories(sandbox, spec.repositories, config.gitCloneTimeoutMs);
      const duration = Math.round(performance.now() - started);
      for (const f of repositoryFailures) log.warn({ repository: f.url, kind: f.kind, error: f.message }, "a repository did not clone; the sandbox goes on without it");
      log.info({ repositories: urls, failed: repositoryFailures.length, duration_ms: duration }, "repositories cloned");
    }
    if (spec.allowedHosts.length > 0) {
      const egress = await startEgress(sandbox, proxy, { ...ids, allowedHosts: spec.allowedHosts, ttlSeconds: spec.limits.lifetimeSeconds }, limits);
      closers.push(() => egress.close());
    }
    return { detach, repositoryFailures };
  } catch (err) {
    await detach();
    throw err;
  }
}
