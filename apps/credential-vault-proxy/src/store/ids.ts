/**
 * Ids of what the vault stores: "vlt_" and "vcrd_" followed by 24 random hex digits. Random, so
 * an id says nothing about when or where it was made and cannot be guessed from another.
 */
import { randomBytes } from "node:crypto";

export const newVaultId = (): string => `vlt_${randomBytes(12).toString("hex")}`;
export const newCredentialId = (): string => `vcrd_${randomBytes(12).toString("hex")}`;

export const VAULT_ID = /^vlt_[0-9a-f]{24}$/;
export const CREDENTIAL_ID = /^vcrd_[0-9a-f]{24}$/;
