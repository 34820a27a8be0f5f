/**
 * Who may call a service: each calling service presents its own token (gRPC metadata
 * `authorization: Bearer <token>`, or the same value in an HTTP header). A service reads the
 * tokens it accepts from a file (MH_SERVICE_TOKENS_FILE), keeps only their SHA-256 digests, and
 * maps each to a named caller with one of the roles that service knows; an unknown or missing
 * token is UNAUTHENTICATED, a role the policy does not list for an RPC PERMISSION_DENIED.
 * A caller should hold a different token for each service it calls, so that no service can
 * replay what it was sent to another.
 *
 * File format: {"services":[{"name":"gateway","role":"admin","token":"<at least 32 chars>"}]};
 * an entry may add "scopes": ["..."], what a service's policy narrows that caller to (the kinds a
 * hand may register at the broker, say).
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Metadata } from "@grpc/grpc-js";
import { MhError } from "@metaharness/errors";

export interface Caller<R extends string = string> {
  readonly name: string;
  readonly role: R;
  /** The entry's "scopes", if it has them. */
  readonly scopes?: readonly string[];
}

export const MIN_TOKEN_CHARS = 32;

/**
 * The HTTP header that carries a service token where the plain Authorization header is someone
 * else's: the broker relays a sandbox's own requests to the credential vault proxy's remote
 * endpoint with `x-mh-service-authorization: Bearer <token>` beside them. The one definition,
 * read by the proxy and written by the broker (and the tests).
 */
export const SERVICE_AUTH_HEADER = "x-mh-service-authorization";

const digest = (token: string): string => createHash("sha256").update(token, "utf8").digest("hex");

/**
 * `authorization` values already accepted, kept so that a known caller's next call needs no
 * SHA-256 (one per gRPC call was about 1% of the session log's CPU per text-only turn, issue 31).
 * Only accepted values are kept, so unknown tokens sent in bulk neither fill nor evict it; a
 * service has a handful of callers, and past the bound the oldest is dropped (it is hashed again).
 */
const MAX_ACCEPTED = 64;

export class ServiceTokens<R extends string = string> {
  private readonly accepted = new Map<string, Caller<R>>();

  private constructor(private readonly byDigest: ReadonlyMap<string, Caller<R>>) {}

  /** The tokens in `file`, each with one of `roles` (any other role refuses the whole file). */
  static async load<R extends string>(file: string, roles: readonly R[]): Promise<ServiceTokens<R>> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(await readFile(file, "utf8"));
    } catch (err) {
      throw new MhError("FAILED_PRECONDITION", `service tokens file ${file} cannot be read as JSON`, { cause: err });
    }
    return ServiceTokens.from(parsed, roles, file);
  }

  static from<R extends string>(parsed: unknown, roles: readonly R[], source = "service tokens"): ServiceTokens<R> {
    const services = typeof parsed === "object" && parsed !== null ? (parsed as { services?: unknown }).services : undefined;
    if (!Array.isArray(services)) throw new MhError("FAILED_PRECONDITION", `${source}: expected {"services": [...]}`);
    const byDigest = new Map<string, Caller<R>>();
    services.forEach((entry: unknown, i) => {
      const e = (typeof entry === "object" && entry !== null ? entry : {}) as Record<string, unknown>;
      const { name, role, token, scopes } = e;
      if (typeof name !== "string" || name === "") throw new MhError("FAILED_PRECONDITION", `${source}: services[${i}].name is required`);
      if (typeof role !== "string" || !(roles as readonly string[]).includes(role)) {
        throw new MhError("FAILED_PRECONDITION", `${source}: services[${i}].role must be one of ${roles.join(", ")}`);
      }
      if (typeof token !== "string" || token.length < MIN_TOKEN_CHARS) {
        throw new MhError("FAILED_PRECONDITION", `${source}: services[${i}].token must have at least ${MIN_TOKEN_CHARS} characters`);
      }
      if (scopes !== undefined && !(Array.isArray(scopes) && scopes.every((x) => typeof x === "string" && x !== ""))) {
        throw new MhError("FAILED_PRECONDITION", `${source}: services[${i}].scopes must be a list of non-empty strings`);
      }
      const key = digest(token);
      if (byDigest.has(key)) throw new MhError("FAILED_PRECONDITION", `${source}: services[${i}] reuses another service's token`);
      byDigest.set(key, { name, role: role as R, ...(scopes === undefined ? {} : { scopes: scopes as string[] }) });
    });
    return new ServiceTokens(byDigest);
  }

  /** The caller an `authorization` value names ("Bearer <token>"); UNAUTHENTICATED otherwise. */
  authenticate(authorization: string | undefined): Caller<R> {
    const known = authorization === undefined ? undefined : this.accepted.get(authorization);
    if (known !== undefined) return known;
    const match = authorization === undefined ? null : /^Bearer ([\x21-\x7e]+)$/.exec(authorization.trim());
    if (match?.[1] === undefined) throw new MhError("UNAUTHENTICATED", "a service token is required (authorization: Bearer <token>)");
    const caller = this.byDigest.get(digest(match[1]));
    if (caller === undefined) throw new MhError("UNAUTHENTICATED", "the service token is not known");
    if (authorization !== undefined) this.accepted.set(authorization, caller);
    if (this.accepted.size > MAX_ACCEPTED) {
      const oldest = this.accepted.keys().next().value;
      if (oldest !== undefined) this.accepted.delete(oldest);
    }
    return caller;
  }

  /** The caller of a gRPC call, by its `authorization` metadata. */
  callerOf(metadata: Metadata): Caller<R> {
    const [value] = metadata.get("authorization");
    return this.authenticate(value === undefined ? undefined : typeof value === "string" ? value : value.toString("utf8"));
  }
}

/**
 * Which roles may call which RPC, written once per service. Keyed by the generated service's
 * method names, so a new RPC does not compile until it is given its roles.
 */
export type Policy<Rpc extends string, R extends string> = Readonly<Record<Rpc, readonly R[]>>;
