/**
 * Ids of what the vault stores: "vlt_" and "vcrd_" followed by 24 random hex digits. Random, so
 * an id says nothing about when or where it was made and cannot be guessed from another.
 */
import { randomBytes } from "node:crypto";
import { invalidArgument } from "@metaharness/errors";

export const newVaultId = (): string => `vlt_${randomBytes(12).toString("hex")}`;
export const newCredentialId = (): string => `vcrd_${randomBytes(12).toString("hex")}`;

export const VAULT_ID = /^vlt_[0-9a-f]{24}$/;
export const CREDENTIAL_ID = /^vcrd_[0-9a-f]{24}$/;

/** `id` when it is a vault id; INVALID_ARGUMENT naming vault_id otherwise. */
export function requireVaultId(id: string): string {
  if (!VAULT_ID.test(id)) throw invalidArgument("vault_id", "is not a vault id");
  return id;
}

/** `id` when it is a credential id; INVALID_ARGUMENT naming credential_id otherwise. */
export function requireCredentialId(id: string): string {
  if (!CREDENTIAL_ID.test(id)) throw invalidArgument("credential_id", "is not a credential id");
  return id;
}
