/**
 * PEM files named by environment variables (certificates, keys, roots), read and checked once at
 * start: a missing file, anything that is not PEM, or a key that does not match its certificate
 * fails the start, naming the variable, instead of failing every handshake later.
 */
import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createSecureContext } from "node:tls";
import { MhError } from "@metaharness/errors";

export async function readPem(variable: string, file: string): Promise<Buffer> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    throw invalidSetting(variable, `${variable}: ${file} cannot be read`, err);
  }
  if (!bytes.includes("-----BEGIN ")) throw invalidSetting(variable, `${variable}: ${file} is not PEM`);
  return bytes;
}

/**
 * Parses every certificate among the roots now. (OpenSSL, given them as `ca`, skips a block it
 * cannot parse without a word, and every handshake would fail later instead.)
 */
export function checkRoots(variable: string, ca: Buffer): void {
  const blocks = ca.toString("utf8").match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) throw invalidSetting(variable, `${variable} holds no certificate`);
  blocks.forEach((block, i) => {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw invalidSetting(variable, `${variable}: certificate ${i + 1} cannot be parsed: ${messageOf(err)}`, err);
    }
  });
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** Lets OpenSSL parse the certificate and key now, and check that they belong together. */
export function checkKeyPair(certVariable: string, keyVariable: string, cert: Buffer, key: Buffer): void {
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    throw invalidSetting(certVariable, `${certVariable} and ${keyVariable} are not a usable certificate and key: ${messageOf(err)}`, err);
  }
}

/** A setting that cannot work: the service does not start. */
export function invalidSetting(variable: string, message: string, cause?: unknown): MhError {
  return new MhError("FAILED_PRECONDITION", message, { field: variable, ...(cause === undefined ? {} : { cause }) });
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
