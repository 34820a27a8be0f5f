/**
 * Validating an MCP credential (the API's mcp_oauth_validate): connect to its server with its
 * token as a session would (initialize, then tools/list). When the server answers 401 and the
 * credential can be refreshed, refresh it (through the token source, so a refresh happens once
 * and its result is stored) and probe again. The verdict says which step failed with the HTTP
 * answer, cut short and scrubbed of the credential's secrets: nothing returned holds a secret.
 */
import { MhError } from "@metaharness/errors";
import type { Db } from "@metaharness/db";
import {
  CredentialValidationStatus,
  RefreshOutcome,
  type McpProbe,
  type ProbeHttpResponse,
  type RefreshAttempt,
  type ValidateMcpCredentialResponse,
} from "@metaharness/proto";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Logger } from "@metaharness/service-kit/logging";
import { openBundle, secretsOf } from "../crypto/bundle.js";
import type { MasterKeyring } from "../crypto/master-keys.js";
import type { Secret } from "../crypto/secret.js";
import { mcpServerUrlOf } from "../store/credential-config.js";
import { credentialInVault, sealedCredential } from "../store/credentials.js";
import { requireCredentialId, requireVaultId } from "../store/ids.js";
import { captureResponse } from "./http-capture.js";
import { TokenRejected, requestOptions, withMcpServer } from "./mcp-connection.js";
import { EgressRefused, egressRefusal } from "../net/egress-policy.js";
import { TokenEndpointRefused } from "./oauth-refresh.js";
import type { OAuthTokenSource } from "./token-source.js";

export interface ValidateDeps {
  readonly db: Db;
  readonly keyring: MasterKeyring;
  readonly tokens: OAuthTokenSource;
  /** The egress policy's fetch. */
  readonly fetch: FetchLike;
  readonly timeoutMs: number;
  readonly logger: Logger;
}

type Probe = { readonly ok: true } | { readonly ok: false; readonly rejected: boolean; readonly unauthorized: boolean; readonly step: McpProbe };

const { CREDENTIAL_VALIDATION_STATUS_VALID: VALID, CREDENTIAL_VALIDATION_STATUS_INVALID: INVALID, CREDENTIAL_VALIDATION_STATUS_UNKNOWN: UNKNOWN } =
  CredentialValidationStatus;

export async function validateMcpCredential(
  deps: ValidateDeps,
  req: { vaultId: string; credentialId: string },
  signal: AbortSignal,
): Promise<ValidateMcpCredentialResponse> {
  const id = requireCredentialId(req.credentialId);
  await credentialInVault(deps.db, requireVaultId(req.vaultId), id);
  const c = await sealedCredential(deps.db, id);
  if (c.credential.archivedAt !== undefined) throw new MhError("FAILED_PRECONDITION", `credential ${id} is archived`, { field: "credential_id" });
  const serverUrl = mcpServerUrlOf(c.config);
  if (serverUrl === undefined) {
    throw new MhError("FAILED_PRECONDITION", `credential ${id} is a ${c.config.$case} credential, not an MCP one`, { field: "credential_id" });
  }
  const secret = openBundle(c.sealed, id, deps.keyring);
  const oauth = c.config.$case === "mcpOauth";
  const hasRefreshToken = oauth && secret.refreshToken !== undefined;
  const verdict = (status: CredentialValidationStatus, mcpProbe?: McpProbe, refresh?: RefreshAttempt): ValidateMcpCredentialResponse => ({
    status,
    hasRefreshToken,
    mcpProbe,
    refresh,
    validatedAt: new Date(),
  });
  const token = oauth ? secret.accessToken : secret.token;
  const probeWith = (t: Secret, more: readonly Secret[] = []): Promise<Probe> =>
    probe({ serverUrl, token: t, secrets: [...secretsOf(secret), ...more], fetch: deps.fetch, timeoutMs: deps.timeoutMs, signal });

  let first: Probe | undefined;
  if (token !== undefined) {
    first = await probeWith(token);
    if (first.ok) return verdict(VALID);
    if (!first.unauthorized || !oauth) return verdict(first.rejected ? INVALID : UNKNOWN, first.step);
  }
  if (!hasRefreshToken) return verdict(INVALID, first?.ok === false ? first.step : undefined, oauth ? { outcome: RefreshOutcome.REFRESH_OUTCOME_NO_REFRESH_TOKEN, httpResponse: undefined } : undefined);

  let next;
  try {
    next = await deps.tokens.refresh(id, c.secretVersion);
  } catch (err) {
    const refused = egressRefusal(err);
    if (refused !== undefined) throw refused;
    const failed = refreshFailure(err);
    if (failed === undefined) throw err;
    deps.logger.info({ credential_id: id, outcome: RefreshOutcome[failed.outcome] }, "validation: the refresh failed");
    return verdict(failed.outcome === RefreshOutcome.REFRESH_OUTCOME_FAILED ? INVALID : UNKNOWN, first?.ok === false ? first.step : undefined, failed);
  }
  const refreshed: RefreshAttempt = { outcome: RefreshOutcome.REFRESH_OUTCOME_SUCCEEDED, httpResponse: undefined };
  const second = await probeWith(next.token, next.secrets);
  if (second.ok) return verdict(VALID, undefined, refreshed);
  return verdict(second.rejected ? INVALID : UNKNOWN, second.step, refreshed);
}

/** What a failed refresh tells the caller; undefined for a failure that is not the token endpoint's. */
function refreshFailure(err: unknown): RefreshAttempt | undefined {
  if (err instanceof TokenEndpointRefused) return { outcome: RefreshOutcome.REFRESH_OUTCOME_FAILED, httpResponse: err.httpResponse };
  if (err instanceof MhError && err.code === "UNAVAILABLE") return { outcome: RefreshOutcome.REFRESH_OUTCOME_CONNECT_ERROR, httpResponse: undefined };
  return undefined;
}

/**
 * One conversation with the server: initialize, then tools/list. A recording fetch keeps the
 * method of the request under way and the last HTTP error answer of a POST (the JSON-RPC
 * requests), so a failure can name its step and show the server's answer.
 */
async function probe(opts: {
  serverUrl: string;
  token: Secret;
  secrets: readonly Secret[];
  fetch: FetchLike;
  timeoutMs: number;
  signal: AbortSignal;
}): Promise<Probe> {
  let method = "initialize";
  let failure: ProbeHttpResponse | undefined;
  const recording: FetchLike = async (url, init) => {
    if (init?.method === "POST") {
      method = methodOf(init.body) ?? method;
      failure = undefined;
    }
    // No redirects: the answer shown is the server's own, never one from where it points us.
    const response = await opts.fetch(url, { ...init, redirect: "error" });
    if (!response.ok && init?.method === "POST") failure = await captureResponse(response.clone(), [opts.token, ...opts.secrets]);
    return response;
  };
  try {
    await withMcpServer({ ...opts, fetch: recording }, (client) => client.listTools({}, requestOptions({ ...opts })));
    return { ok: true };
  } catch (err) {
    // Cancelled, or refused by the egress policy: not a verdict on the credential.
    if (err instanceof MhError && (err.code === "CANCELLED" || err instanceof EgressRefused)) throw err;
    const status = failure?.statusCode ?? 0;
    const unauthorized = err instanceof TokenRejected;
    return { ok: false, unauthorized, rejected: unauthorized || status === 403, step: { method, httpResponse: failure } };
  }
}

function methodOf(body: unknown): string | undefined {
  if (typeof body !== "string") return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    const m = typeof parsed === "object" && parsed !== null ? (parsed as { method?: unknown }).method : undefined;
    return typeof m === "string" ? m.slice(0, 64) : undefined;
  } catch {
    return undefined;
  }
}
