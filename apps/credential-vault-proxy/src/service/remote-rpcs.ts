/**
 * The broker's half of the service: open a sandbox's git remotes and egress endpoint, close them
 * when the sandbox ends. What the broker gets back are URLs and capabilities for the proxy's
 * remote HTTP endpoint, which adds the session's credentials on the way to the real server; no
 * credential ever crosses to the broker, let alone into the sandbox.
 */
import { MhError, invalidArgument } from "@metaharness/errors";
import type { Db } from "@metaharness/db";
import { checkNoNul } from "@metaharness/service-kit/grpc";
import { ANY_PUBLIC_HOST, type UnrestrictedLimits } from "../egress/egress-scope.js";
import type { SandboxCas } from "../egress/sandbox-ca.js";
import { PACKAGE_REGISTRY_HOSTS } from "../net/package-registries.js";
import { normalizeUrl } from "../store/credential-config.js";
import { closeSandboxRemotes, openRemote } from "../store/remotes.js";
import type { SessionVaults } from "../session/session-vaults.js";
import { guarded, type GuardDeps } from "./guard.js";

export interface RemoteDeps extends GuardDeps {
  readonly db: Db;
  readonly vaults: SessionVaults;
  /** The remote HTTP endpoint as the broker reaches it, without a trailing slash. */
  readonly baseUrl: () => string;
  readonly ttlSeconds: number;
  readonly unrestricted: UnrestrictedLimits;
  /** Makes each egress remote's certificate authority. */
  readonly cas: SandboxCas;
}

/** As many as a session may have (session-log store/repositories.ts). */
export const MAX_REPOSITORIES = 64;
export const MAX_ALLOWED_HOSTS = 64;
const SANDBOX_ID = /^[A-Za-z0-9_-]{1,128}$/;
const HOST_PATTERN = /^(\*\.)?[a-z0-9]([a-z0-9.-]{0,252})(:\d{1,5})?$/;

export function remoteRpcs(deps: RemoteDeps) {
  const { db } = deps;
  const expiry = (ttl: number): Date => new Date(Date.now() + 1000 * (ttl === 0 ? deps.ttlSeconds : Math.min(ttl, deps.ttlSeconds)));
  return {
    openGitRemote: guarded("openGitRemote", deps, async (req, ctx) => {
      const sandboxId = checkSandbox(req.sandboxId);
      if (req.repositoryUrls.length === 0 || req.repositoryUrls.length > MAX_REPOSITORIES) {
        throw invalidArgument("repository_urls", `between 1 and ${MAX_REPOSITORIES} URLs`);
      }
      const urls = req.repositoryUrls.map((u, i) => normalizeUrl(u, `repository_urls[${i}]`));
      await deps.vaults.requireLive(req.sessionId);
      const expiresAt = expiry(req.ttlSeconds);
      const capability = await openRemote(db, { kind: "git", sessionId: req.sessionId, sandboxId, scope: urls, expiresAt });
      const remotes: Record<string, string> = {};
      req.repositoryUrls.forEach((u, i) => (remotes[u] = `${deps.baseUrl()}/git/${capability}/${i}`));
      ctx.logger.info({ session_id: req.sessionId, sandbox_id: sandboxId, repositories: urls, expires_at: expiresAt.toISOString() }, "git remotes opened");
      return { remotes, expiresAt };
    }),
    openEgress: guarded("openEgress", deps, async (req, ctx) => {
      const sandboxId = checkSandbox(req.sandboxId);
      const hosts = checkEgressScope(req, deps.unrestricted);
      await deps.vaults.requireLive(req.sessionId);
      const expiresAt = expiry(req.ttlSeconds);
      const ca = deps.cas.create(sandboxId, expiresAt);
      const capability = await openRemote(db, { kind: "egress", sessionId: req.sessionId, sandboxId, scope: hosts, expiresAt, ca });
      ctx.logger.info(
        { session_id: req.sessionId, sandbox_id: sandboxId, allowed_hosts: req.allowedHosts, package_managers: req.allowPackageManagers, unrestricted: req.unrestricted, expires_at: expiresAt.toISOString() },
        "egress opened",
      );
      return { proxyUrl: deps.baseUrl(), expiresAt, proxyAuthorization: `Bearer ${capability}`, caCertificatePem: ca.certificatePem };
    }),
    closeSandboxRemotes: guarded("closeSandboxRemotes", deps, async (req, ctx) => {
      checkNoNul(req, "");
      const closed = await closeSandboxRemotes(db, req.sessionId, checkSandbox(req.sandboxId));
      if (closed > 0) ctx.logger.info({ session_id: req.sessionId, sandbox_id: req.sandboxId, closed }, "sandbox remotes closed");
      return { closed };
    }),
  };
}

/** The scope to store: ANY_PUBLIC_HOST, or the allowed hosts (lower-case) and the package registries if asked for. */
function checkEgressScope(req: { allowedHosts: string[]; allowPackageManagers: boolean; unrestricted: boolean }, unrestricted: UnrestrictedLimits): string[] {
  if (req.unrestricted) {
    if (req.allowedHosts.length > 0) throw invalidArgument("allowed_hosts", "must be empty with unrestricted (which reaches every public host)");
    if (unrestricted.ports.length === 0) {
      throw new MhError("FAILED_PRECONDITION", "unrestricted: this deployment gives sandboxes no unrestricted egress (MH_EGRESS_UNRESTRICTED_PORTS=none)", { field: "unrestricted" });
    }
    return [ANY_PUBLIC_HOST];
  }
  if (req.allowedHosts.length > MAX_ALLOWED_HOSTS || (req.allowedHosts.length === 0 && !req.allowPackageManagers)) {
    throw invalidArgument("allowed_hosts", `between 1 and ${MAX_ALLOWED_HOSTS} hosts (0 with allow_package_managers)`);
  }
  const hosts = req.allowedHosts.map((h, i) => {
    const host = h.trim().toLowerCase();
    if (!HOST_PATTERN.test(host)) throw invalidArgument(`allowed_hosts[${i}]`, "is not a host name or *.domain pattern");
    return host;
  });
  return [...new Set([...hosts, ...(req.allowPackageManagers ? PACKAGE_REGISTRY_HOSTS : [])])];
}

function checkSandbox(id: string): string {
  if (!SANDBOX_ID.test(id)) throw invalidArgument("sandbox_id", "is required (1-128 of [A-Za-z0-9_-])");
  return id;
}
