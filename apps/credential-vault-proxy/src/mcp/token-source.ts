/**
 * The access token of an mcp_oauth credential, refreshed when it expires (or when the MCP server
 * rejects it) exactly once however many calls need it at the same time:
 * - within this process, concurrent refreshes of one credential share one promise (single flight);
 * - across instances, the refresh runs in a transaction holding the credential's row lock
 *   (SELECT ... FOR UPDATE), and whoever gets the lock second finds the token already replaced
 *   (a later expiry, or a newer secret_version) and uses it instead of refreshing again. This
 *   matters beyond cost: with refresh-token rotation a second refresh would use a spent token.
 * The new tokens are sealed under the active master key before the transaction commits.
 */
import { MhError } from "@metaharness/errors";
import type { Db } from "@metaharness/db";
import type { McpOAuthCredential } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import { mergeBundles, openBundle, sealBundle, secretsOf, type SecretBundle } from "../crypto/bundle.js";
import type { MasterKeyring } from "../crypto/master-keys.js";
import type { Secret } from "../crypto/secret.js";
import { sealedCredential, updateSecret, type SealedCredential } from "../store/credentials.js";
import type { Refresher } from "./oauth-refresh.js";

export interface AccessToken {
  readonly credentialId: string;
  readonly token: Secret;
  /** The credential's secret_version this token belongs to. */
  readonly version: number;
  /** Every secret of the credential, to scrub from text that comes back from the server. */
  readonly secrets: readonly Secret[];
}

export interface TokenSourceDeps {
  readonly db: Db;
  readonly keyring: MasterKeyring;
  readonly refresh: Refresher;
  readonly skewMs: number;
  readonly logger: Logger;
}

export class OAuthTokenSource {
  private readonly inflight = new Map<string, Promise<AccessToken>>();
  /** Refreshes this process performed (a metric; tests read it). */
  refreshes = 0;

  constructor(private readonly deps: TokenSourceDeps) {}

  /** A token that is not about to expire, refreshing it first if needed (a static bearer never is). */
  async current(credentialId: string): Promise<AccessToken> {
    const c = await sealedCredential(this.deps.db, credentialId);
    const secret = openBundle(c.sealed, credentialId, this.deps.keyring);
    if (c.config.$case === "mcpBearer" || this.fresh(c, secret)) return tokenOf(c, secret);
    return this.refresh(credentialId, undefined);
  }

  /**
   * A new token because the server rejected the one of `rejectedVersion` (or, when undefined,
   * because it expired). Joins a refresh of this credential already under way in this process.
   */
  refresh(credentialId: string, rejectedVersion: number | undefined): Promise<AccessToken> {
    const running = this.inflight.get(credentialId);
    if (running !== undefined) return running;
    const started = this.refreshLocked(credentialId, rejectedVersion).finally(() => this.inflight.delete(credentialId));
    this.inflight.set(credentialId, started);
    return started;
  }

  private refreshLocked(credentialId: string, rejectedVersion: number | undefined): Promise<AccessToken> {
    const { db, keyring, logger } = this.deps;
    return db.transaction(async (tx) => {
      const c = await sealedCredential(tx, credentialId, true);
      const secret = openBundle(c.sealed, credentialId, keyring);
      const replaced = rejectedVersion === undefined ? this.fresh(c, secret) : c.secretVersion !== rejectedVersion;
      if (replaced && secret.accessToken !== undefined) return tokenOf(c, secret);
      const config = oauthConfig(c);
      const started = performance.now();
      const got = await this.deps.refresh(config, secret);
      this.refreshes += 1;
      const next = mergeBundles(secret, { accessToken: got.accessToken, refreshToken: got.refreshToken });
      const nextConfig = { ...config, expiresAt: got.expiresAt };
      await updateSecret(tx, credentialId, { $case: "mcpOauth", value: nextConfig }, sealBundle(next, credentialId, keyring));
      logger.info(
        {
          credential_id: credentialId,
          server: config.mcpServerUrl,
          expires_at: got.expiresAt?.toISOString(),
          rotated_refresh_token: got.refreshToken !== undefined,
          duration_ms: Math.round(performance.now() - started),
        },
        "refreshed an OAuth access token",
      );
      return { credentialId, token: got.accessToken, version: c.secretVersion + 1, secrets: [...secretsOf(next), ...secretsOf(secret)] };
    });
  }

  private fresh(c: SealedCredential, secret: SecretBundle): boolean {
    if (secret.accessToken === undefined) return false;
    const expiresAt = oauthConfig(c).expiresAt;
    return expiresAt === undefined || expiresAt.getTime() - this.deps.skewMs > Date.now();
  }
}

function oauthConfig(c: SealedCredential): McpOAuthCredential {
  if (c.config.$case !== "mcpOauth") {
    throw new MhError("FAILED_PRECONDITION", `credential ${c.credential.credentialId} is not an mcp_oauth credential and cannot be refreshed`);
  }
  return c.config.value;
}

function tokenOf(c: SealedCredential, secret: SecretBundle): AccessToken {
  const token = c.config.$case === "mcpBearer" ? secret.token : secret.accessToken;
  if (token === undefined) throw new MhError("FAILED_PRECONDITION", `credential ${c.credential.credentialId} holds no token`);
  return { credentialId: c.credential.credentialId, token, version: c.secretVersion, secrets: secretsOf(secret) };
}
