/**
 * The tokens of a session's repository resources live in the credential vault proxy, never here:
 * each is a git_token credential scoped to its repository's URL, in the session's own vault
 * (made when its first token arrives; the proxy lets only that session draw from it and lists it
 * nowhere, so the tenant's vaults stay as the tenant made them). The broker's git path asks the
 * proxy for the credential on every request, so a rotated token is used from the next git
 * command on. The gateway keeps ids only (store.ts ResourceTokens).
 */
import { MhError } from "@metaharness/errors";
import { CredentialType } from "@metaharness/proto";
import type { CredentialProxyRpc } from "../clients.js";
import type { StoredToken } from "./resource-store.js";
import type { ResourceTokens } from "./store.js";

export interface TokenTarget {
  readonly tenant: string;
  readonly sessionId: string;
  readonly resourceId: string;
  readonly url: string;
}

/** The ids of a resource's token, if it has one. */
export function tokenOf(tokens: ResourceTokens, resourceId: string): StoredToken | undefined {
  const credentialId = tokens.credentials[resourceId];
  return credentialId === undefined || tokens.vaultId === null ? undefined : { vaultId: tokens.vaultId, credentialId };
}

/**
 * Stores `token` for a resource: a new secret for the credential it has (`current`), or a new
 * credential in the session's own vault, which is made if the session has none yet.
 */
export async function putToken(
  proxy: CredentialProxyRpc,
  vaultId: string | null,
  current: StoredToken | undefined,
  target: TokenTarget,
  token: string,
): Promise<StoredToken> {
  let vault = current?.vaultId ?? vaultId;
  if (vault === null) {
    // Get-or-create: a session has one own vault, so concurrent or retried calls find the same one.
    const { vault: made } = await proxy.createVault({ tenant: target.tenant, displayName: `session ${target.sessionId}`, metadata: {}, sessionId: target.sessionId });
    if (made === undefined) throw new MhError("INTERNAL", "CreateVault returned no vault");
    vault = made.vaultId;
  }
  const inVault = vault;
  const put = (credentialId: string) =>
    proxy.putCredential({
      vaultId: inVault,
      credentialId,
      type: CredentialType.CREDENTIAL_TYPE_GIT_TOKEN,
      displayName: target.resourceId,
      config: { $case: "gitToken", value: { urlPrefix: target.url, host: "", username: "" } },
      secret: { token, accessToken: "", refreshToken: "", clientSecret: "" },
      metadata: { "mh.resource_id": target.resourceId },
    });
  let answer;
  try {
    answer = await put(current?.credentialId ?? "");
  } catch (err) {
    // Its credential was deleted behind our back: store the token as a new one.
    if (current === undefined || MhError.from(err).code !== "NOT_FOUND") throw err;
    answer = await put("");
  }
  if (answer.credential === undefined) throw new MhError("INTERNAL", "PutCredential returned no credential");
  return { vaultId: inVault, credentialId: answer.credential.credentialId };
}

/** Deletes a resource's credential, if it has one. Idempotent. */
export async function dropToken(proxy: CredentialProxyRpc | undefined, token: StoredToken | undefined): Promise<void> {
  if (token === undefined) return;
  await ignoreNotFound(reach(proxy).deleteCredential(token));
}

/** Deletes the session's own vault with every token in it (the session is being deleted). Idempotent. */
export async function dropVault(proxy: CredentialProxyRpc | undefined, vaultId: string | null): Promise<void> {
  if (vaultId === null) return;
  await ignoreNotFound(reach(proxy).deleteVault({ vaultId }));
}

function reach(proxy: CredentialProxyRpc | undefined): CredentialProxyRpc {
  if (proxy === undefined) throw new MhError("FAILED_PRECONDITION", "the session's repository tokens are in a credential vault proxy this gateway no longer reaches");
  return proxy;
}

async function ignoreNotFound(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (MhError.from(err).code !== "NOT_FOUND") throw err;
  }
}
