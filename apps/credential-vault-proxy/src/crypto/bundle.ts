/**
 * A credential's secret fields as one sealed unit: what PutCredential's CredentialSecret carries,
 * held as Secrets in memory and as one AES-GCM ciphertext at rest. The JSON plaintext exists only
 * between `sealBundle`'s serialisation and the cipher, and between the decipher and `openBundle`.
 */
import type { CredentialSecret } from "@metaharness/proto";
import { MhError } from "@metaharness/errors";
import { open, seal, type Sealed } from "./envelope.js";
import type { MasterKeyring } from "./master-keys.js";
import { Secret, secretOrUndefined } from "./secret.js";

export interface SecretBundle {
  /** git_token and http_bearer. */
  readonly token?: Secret | undefined;
  /** mcp_oauth. */
  readonly accessToken?: Secret | undefined;
  readonly refreshToken?: Secret | undefined;
  readonly clientSecret?: Secret | undefined;
}

const FIELDS = ["token", "accessToken", "refreshToken", "clientSecret"] as const;
type Field = (typeof FIELDS)[number];

export function bundleFromProto(secret: CredentialSecret | undefined): SecretBundle {
  return {
    token: secretOrUndefined(secret?.token),
    accessToken: secretOrUndefined(secret?.accessToken),
    refreshToken: secretOrUndefined(secret?.refreshToken),
    clientSecret: secretOrUndefined(secret?.clientSecret),
  };
}

/** `update`'s fields where it has them, `base`'s elsewhere. */
export function mergeBundles(base: SecretBundle, update: SecretBundle): SecretBundle {
  const out: Partial<Record<Field, Secret | undefined>> = {};
  for (const f of FIELDS) out[f] = update[f] ?? base[f];
  return out;
}

/** Every secret of the bundle (for scrubbing text that came from elsewhere). */
export function secretsOf(bundle: SecretBundle): Secret[] {
  return FIELDS.map((f) => bundle[f]).filter((s): s is Secret => s !== undefined);
}

export function sealBundle(bundle: SecretBundle, credentialId: string, keyring: MasterKeyring): Sealed {
  const plain: Partial<Record<Field, string>> = {};
  for (const f of FIELDS) {
    const value = bundle[f];
    if (value !== undefined) plain[f] = value.reveal();
  }
  const bytes = Buffer.from(JSON.stringify(plain), "utf8");
  try {
    return seal(bytes, credentialId, keyring);
  } finally {
    bytes.fill(0);
  }
}

export function openBundle(sealed: Sealed, credentialId: string, keyring: MasterKeyring): SecretBundle {
  const bytes = open(sealed, credentialId, keyring);
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    throw new MhError("DATA_LOSS", `credential ${credentialId}: its secret is not a bundle`, { cause: err });
  } finally {
    bytes.fill(0);
  }
  if (typeof parsed !== "object" || parsed === null) {
    throw new MhError("DATA_LOSS", `credential ${credentialId}: its secret is not a bundle`);
  }
  const record = parsed as Record<string, unknown>;
  const out: Partial<Record<Field, Secret | undefined>> = {};
  for (const f of FIELDS) {
    const value = record[f];
    out[f] = typeof value === "string" && value !== "" ? new Secret(value) : undefined;
  }
  return out;
}
