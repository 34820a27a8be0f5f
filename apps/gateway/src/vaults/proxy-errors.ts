/**
 * The credential vault proxy speaks in its own fields (`secret.access_token`,
 * `mcp_oauth.token_endpoint`); a caller of the API wrote the SDK's (`auth.access_token`,
 * `auth.refresh.token_endpoint`). This renames the field an error names, so a 400 starts with the
 * field as the caller sent it, and turns what the proxy says about metadata into the SDK's typed
 * `invalid_metadata`. A malformed id is "not found", as any unknown id is.
 */
import { MhError } from "@metaharness/errors";
import { ApiError } from "../errors/api-error.js";

const SDK_FIELD: Readonly<Record<string, string>> = {
  type: "auth.type",
  expires_at: "auth.expires_at",
  scope: "auth.refresh.scope",
  "secret.access_token": "auth.access_token",
  "secret.refresh_token": "auth.refresh.refresh_token",
  "secret.client_secret": "auth.refresh.token_endpoint_auth.client_secret",
  "secret.token": "auth.token",
  "mcp_oauth.mcp_server_url": "auth.mcp_server_url",
  "mcp_bearer.mcp_server_url": "auth.mcp_server_url",
  "mcp_oauth.token_endpoint": "auth.refresh.token_endpoint",
  "mcp_oauth.client_id": "auth.refresh.client_id",
  "mcp_oauth.token_endpoint_auth_method": "auth.refresh.token_endpoint_auth.type",
  "mcp_oauth.resource": "auth.refresh.resource",
};

const ID_FIELDS: ReadonlySet<string> = new Set(["vault_id", "credential_id"]);

export function fromProxy(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const mh = MhError.from(err);
  const field = mh.field;
  if (field === undefined || mh.code === "NOT_FOUND") return ApiError.from(mh);
  if (mh.code === "INVALID_ARGUMENT" && ID_FIELDS.has(field)) return new ApiError("not_found", `${field}: no such ${field.slice(0, -3)}`, { cause: err });
  const sdkField = SDK_FIELD[field] ?? field;
  const rest = mh.message.startsWith(`${field}: `) ? mh.message.slice(field.length + 2) : mh.message;
  const message = `${sdkField}: ${rest}`;
  if (field === "metadata" && mh.code === "INVALID_ARGUMENT") return new ApiError("invalid_metadata", message, { cause: err });
  return ApiError.from(new MhError(mh.code, message, { field: sdkField, cause: err }));
}

/** `call` with the proxy's errors in the API's terms. */
export async function proxied<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    throw fromProxy(err);
  }
}
