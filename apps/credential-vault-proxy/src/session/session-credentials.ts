/**
 * The credential a session may use for a purpose: the best-matching one of its type in the
 * session's vaults (the most specific match; among equals, the vault the session names first).
 * Only this module and the token source open sealed secrets, and what they hand out are Secrets.
 */
import { MhError } from "@metaharness/errors";
import type { Db } from "@metaharness/db";
import { CredentialType } from "@metaharness/proto";
import { openBundle, type SecretBundle } from "../crypto/bundle.js";
import type { MasterKeyring } from "../crypto/master-keys.js";
import { Secret } from "../crypto/secret.js";
import { MCP_TYPES, gitMatchScore, hostMatches, mcpServerUrlOf, tryNormalizeUrl } from "../store/credential-config.js";
import { credentialsOfType, sealedCredential, type StoredCredential } from "../store/credentials.js";
import type { SessionVaults } from "./session-vaults.js";

export interface GitAuth {
  readonly credentialId: string;
  readonly username: string;
  readonly token: Secret;
}

export interface HeaderAuth {
  readonly credentialId: string;
  readonly headerName: string;
  /** The whole header value ("Bearer <token>" for Authorization, the token for other headers). */
  readonly value: Secret;
  readonly token: Secret;
}

/** GitHub and most hosts accept any user name with a token; GitHub documents this one. */
export const DEFAULT_GIT_USERNAME = "x-access-token";

export class SessionCredentials {
  constructor(
    private readonly db: Db,
    private readonly vaults: SessionVaults,
    private readonly keyring: MasterKeyring,
  ) {}

  /** The git_token for a repository URL, or undefined when none matches (a public repository). */
  async git(sessionId: string, repoUrl: string): Promise<GitAuth | undefined> {
    const url = tryNormalizeUrl(repoUrl);
    if (url === undefined) return undefined;
    const best = await this.best(sessionId, [CredentialType.CREDENTIAL_TYPE_GIT_TOKEN], (c) =>
      c.config.$case === "gitToken" ? gitMatchScore(c.config.value, url) : 0,
    );
    if (best === undefined || best.config.$case !== "gitToken") return undefined;
    const { token } = await this.open(best.credential.credentialId);
    if (token === undefined) return undefined;
    return { credentialId: best.credential.credentialId, username: best.config.value.username || DEFAULT_GIT_USERNAME, token };
  }

  /** The http_bearer for a host ("api.example.com" or "host:port"), or undefined. */
  async bearer(sessionId: string, host: string): Promise<HeaderAuth | undefined> {
    const best = await this.best(sessionId, [CredentialType.CREDENTIAL_TYPE_HTTP_BEARER], (c) =>
      c.config.$case === "httpBearer" && hostMatches(c.config.value.host, host) ? 1 + c.config.value.host.length : 0,
    );
    if (best === undefined || best.config.$case !== "httpBearer") return undefined;
    const { token } = await this.open(best.credential.credentialId);
    if (token === undefined) return undefined;
    const headerName = best.config.value.headerName || "Authorization";
    const value = headerName.toLowerCase() === "authorization" ? new Secret(`Bearer ${token.reveal()}`) : token;
    return { credentialId: best.credential.credentialId, headerName, value, token };
  }

  /** The MCP credential (mcp_oauth or mcp_bearer) for a server URL; FAILED_PRECONDITION when the session has none. */
  async mcp(sessionId: string, serverUrl: string): Promise<StoredCredential> {
    const url = tryNormalizeUrl(serverUrl);
    if (url === undefined) throw new MhError("INVALID_ARGUMENT", "mcp_server_url: must be an http or https URL", { field: "mcp_server_url" });
    const best = await this.best(sessionId, MCP_TYPES, (c) => (mcpServerUrlOf(c.config) === url ? 1 : 0));
    if (best === undefined) {
      throw new MhError("FAILED_PRECONDITION", `no vault of session ${sessionId} holds an MCP credential for ${url}`, {
        field: "mcp_server_url",
      });
    }
    return best;
  }

  private async best(
    sessionId: string,
    types: readonly CredentialType[],
    score: (c: StoredCredential) => number,
  ): Promise<StoredCredential | undefined> {
    const vaultIds = await this.vaults.vaultIds(sessionId);
    const candidates = await credentialsOfType(this.db, vaultIds, types);
    const order = new Map(vaultIds.map((id, i) => [id, i]));
    let best: { c: StoredCredential; score: number; rank: number } | undefined;
    for (const c of candidates) {
      const s = score(c);
      if (s === 0) continue;
      const rank = order.get(c.credential.vaultId) ?? Number.MAX_SAFE_INTEGER;
      if (best === undefined || s > best.score || (s === best.score && rank < best.rank)) best = { c, score: s, rank };
    }
    return best?.c;
  }

  private async open(credentialId: string): Promise<SecretBundle> {
    const c = await sealedCredential(this.db, credentialId);
    return openBundle(c.sealed, credentialId, this.keyring);
  }
}
