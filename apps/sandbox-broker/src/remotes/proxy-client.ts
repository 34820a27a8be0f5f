/**
 * The broker's client of the credential vault proxy: it presents the broker's own service token
 * (read from MH_CREDENTIAL_PROXY_TOKEN_FILE) and may only open and close a sandbox's git remotes
 * and egress endpoint. The same token goes, as SERVICE_AUTH_HEADER (service-kit), on every request the
 * broker relays to the proxy's remote endpoint. The broker never holds a vault credential.
 */
import { CredentialVaultProxyClient, CredentialVaultProxyService } from "@metaharness/proto";
import { createClient, promisify, readServiceToken, type GrpcTls, type HttpsClientTls, type PromiseClient } from "@metaharness/service-kit/grpc";

export type CredentialProxy = PromiseClient<typeof CredentialVaultProxyService>;

export interface ProxyConnection {
  readonly client: CredentialProxy;
  /** `Bearer <token>`, for SERVICE_AUTH_HEADER. */
  readonly serviceAuthorization: string;
  /** For relaying to the proxy's remote endpoint when it is https://: whom to trust, what to present. */
  readonly tls: HttpsClientTls | undefined;
  close(): void;
}

export async function connectCredentialProxy(
  address: string,
  tokenFile: string,
  tls: GrpcTls,
): Promise<ProxyConnection> {
  const token = await readServiceToken(tokenFile);
  const raw = createClient(CredentialVaultProxyClient, address, { bearerToken: token, credentials: tls.client });
  return {
    client: promisify(raw, CredentialVaultProxyService),
    serviceAuthorization: `Bearer ${token}`,
    tls: tls.httpsClient,
    close: () => raw.close(),
  };
}
