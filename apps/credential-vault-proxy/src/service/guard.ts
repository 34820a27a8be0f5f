/**
 * Every RPC of the proxy goes through `guarded`: the caller is authenticated by its service token
 * (gRPC metadata `authorization`) and authorized by the policy before the handler runs, and the
 * handler's logger names the caller. A handler cannot forget the check: there is no other way to
 * register one.
 */
import { CredentialVaultProxyService } from "@metaharness/proto";
import { guardedUnary, type Guard, type GuardedContext as KitContext } from "@metaharness/service-kit/auth";
import { POLICY, type Role, type RpcName } from "../auth/policy.js";

export type GuardedContext = KitContext<Role>;
export type GuardDeps = Guard<Role>;

type Definition<R extends RpcName> = (typeof CredentialVaultProxyService)[R];
type Request<R extends RpcName> = Definition<R> extends { requestDeserialize: (b: Buffer) => infer Q } ? Q : never;
type Response<R extends RpcName> = Definition<R> extends { responseSerialize: (v: infer S) => Buffer } ? S : never;

export function guarded<R extends RpcName>(
  rpc: R,
  deps: GuardDeps,
  fn: (req: Request<R>, ctx: GuardedContext) => Promise<Response<R>>,
): ReturnType<typeof guardedUnary<Request<R>, Response<R>, Role>> {
  return guardedUnary(CredentialVaultProxyService[rpc].path.slice(1), deps, POLICY[rpc], fn);
}

/** For checkNoNul: request fields whose keys are the caller's (a vault's or credential's metadata map). */
export const KEYED: ReadonlySet<string> = new Set(["metadata"]);
/** The same in an update, whose metadata is a patch with its map under `upsert`. */
export const PATCH_KEYED: ReadonlySet<string> = new Set(["upsert"]);
