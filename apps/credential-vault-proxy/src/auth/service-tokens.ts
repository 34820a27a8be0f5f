/**
 * Who may call the proxy: each calling service presents its own token (gRPC metadata
 * `authorization: Bearer <token>`, or the same header on the remote HTTP endpoint). Tokens come
 * from a file (MH_SERVICE_TOKENS_FILE), are kept only as SHA-256 digests, and map to a named
 * caller with one role. An unknown or missing token is UNAUTHENTICATED.
 *
 * File format: {"services":[{"name":"gateway","role":"admin","token":"<at least 32 chars>"}]}
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { MhError } from "@metaharness/errors";

export const ROLES = ["admin", "harness", "broker"] as const;
export type Role = (typeof ROLES)[number];

export interface Caller {
  readonly name: string;
  readonly role: Role;
}

export const MIN_TOKEN_CHARS = 32;

const digest = (token: string): string => createHash("sha256").update(token, "utf8").digest("hex");

export class ServiceTokens {
  private constructor(private readonly byDigest: ReadonlyMap<string, Caller>) {}

  static async load(file: string): Promise<ServiceTokens> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(await readFile(file, "utf8"));
    } catch (err) {
      throw new MhError("FAILED_PRECONDITION", `service tokens file ${file} cannot be read as JSON`, { cause: err });
    }
    return ServiceTokens.from(parsed, file);
  }

  static from(parsed: unknown, source = "service tokens"): ServiceTokens {
    const services = typeof parsed === "object" && parsed !== null ? (parsed as { services?: unknown }).services : undefined;
    if (!Array.isArray(services)) throw new MhError("FAILED_PRECONDITION", `${source}: expected {"services": [...]}`);
    const byDigest = new Map<string, Caller>();
    services.forEach((entry: unknown, i) => {
      const e = (typeof entry === "object" && entry !== null ? entry : {}) as Record<string, unknown>;
      const { name, role, token } = e;
      if (typeof name !== "string" || name === "") throw new MhError("FAILED_PRECONDITION", `${source}: services[${i}].name is required`);
      if (typeof role !== "string" || !(ROLES as readonly string[]).includes(role)) {
        throw new MhError("FAILED_PRECONDITION", `${source}: services[${i}].role must be one of ${ROLES.join(", ")}`);
      }
      if (typeof token !== "string" || token.length < MIN_TOKEN_CHARS) {
        throw new MhError("FAILED_PRECONDITION", `${source}: services[${i}].token must have at least ${MIN_TOKEN_CHARS} characters`);
      }
      const key = digest(token);
      if (byDigest.has(key)) throw new MhError("FAILED_PRECONDITION", `${source}: services[${i}] reuses another service's token`);
      byDigest.set(key, { name, role: role as Role });
    });
    return new ServiceTokens(byDigest);
  }

  /** The caller an `authorization` value names ("Bearer <token>"); UNAUTHENTICATED otherwise. */
  authenticate(authorization: string | undefined): Caller {
    const match = authorization === undefined ? null : /^Bearer ([\x21-\x7e]+)$/.exec(authorization.trim());
    if (match?.[1] === undefined) throw new MhError("UNAUTHENTICATED", "a service token is required (authorization: Bearer <token>)");
    const caller = this.byDigest.get(digest(match[1]));
    if (caller === undefined) throw new MhError("UNAUTHENTICATED", "the service token is not known");
    return caller;
  }
}
