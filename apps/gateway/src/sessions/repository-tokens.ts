/**
 * The tokens of a session's repository resources live in the credential vault proxy, never here:
 * each is a git_token credential scoped to its repository's URL, in the session's own vault
 * (made when its first token arrives; the proxy lets only that session draw from it and lists it
 * nowhere, so the tenant's vaults stay as the tenant made them). The broker's git path asks the
 * proxy for the credential on every request, so a rotated token is used from the next git
 * command on. The gateway keeps ids only (store/sessions.ts ResourceTokens).
 */
import { MhError } from "@metaharness/errors";
import { CredentialType } from "@metaharness/proto";
import type { CredentialProxyRpc } from "../routes/context.js";
import type { ResourceTokens } from "../store/sessions.js";

export interface TokenTarget {
  readonly tenant: string;
  readonly sessionId: string;
  readonly resourceId: string;
  readonly url: string;
}

/** Stores `token` for a resource: a new credential, or a new secret for the one it has. */
export async function putToken(proxy: CredentialProxyRpc, tokens: ResourceTokens, target: TokenTarget, token: string): Promise<ResourceTokens> {
  let vaultId = tokens.vaultId;
  if (vaultId === null) {
    // Get-or-create: a session has one own vault, so a retry after a crash finds the same one.
    const { vault } = await proxy.createVault({ tenant: target.tenant, displayName: `session ${target.sessionId}`, metadata: {}, sessionId: target.sessionId });
    if (vault === undefined) throw new MhError("INTERNAL", "CreateVault returned no vault");
    vaultId = vault.vaultId;
  }
  const put = (credentialId: string) =>
    proxy.putCredential({
      vaultId,
      credentialId,
      type: CredentialType.CREDENTIAL_TYPE_GIT_TOKEN,
      displayName: target.resourceId,
      config: { $case: "gitToken", value: { urlPrefix: target.url, host: "", username: "" } },
      secret: { token, accessToken: "", refreshToken: "", clientSecret: "" },
    });
  const existing = tokens.credentials[target.resourceId];
  let answer;
  try {
    answer = await put(existing ?? "");
  } catch (err) {
    // Its credential was deleted behind our back: store the token as a new one.
    if (existing === undefined || MhError.from(err).code !== "NOT_FOUND") throw err;
    answer = await put("");
  }
  if (answer.credential === undefined) throw new MhError("INTERNAL", "PutCredential returned no credential");
  return { vaultId, credentials: { ...tokens.credentials, [target.resourceId]: answer.credential.credentialId } };
}

/** Deletes a resource's credential, if it has one. Idempotent. */
export async function dropToken(proxy: CredentialProxyRpc | undefined, tokens: ResourceTokens, resourceId: string): Promise<ResourceTokens> {
  const credentialId = tokens.credentials[resourceId];
  if (credentialId === undefined || tokens.vaultId === null) return tokens;
  if (proxy === undefined) throw new MhError("FAILED_PRECONDITION", "the session's repository tokens are in a credential vault proxy this gateway no longer reaches");
  await ignoreNotFound(proxy.deleteCredential({ vaultId: tokens.vaultId, credentialId }));
  const { [resourceId]: _dropped, ...credentials } = tokens.credentials;
  return { vaultId: tokens.vaultId, credentials };
}

/** Deletes the session's own vault with every token in it (the session is being deleted). Idempotent. */
export async function dropVault(proxy: CredentialProxyRpc | undefined, tokens: ResourceTokens): Promise<void> {
  if (tokens.vaultId === null) return;
  if (proxy === undefined) throw new MhError("FAILED_PRECONDITION", "the session's repository tokens are in a credential vault proxy this gateway no longer reaches");
  await ignoreNotFound(proxy.deleteVault({ vaultId: tokens.vaultId }));
}

async function ignoreNotFound(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (MhError.from(err).code !== "NOT_FOUND") throw err;
  }
}
