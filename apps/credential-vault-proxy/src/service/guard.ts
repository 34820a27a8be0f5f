/**
 * Every RPC of the proxy goes through `guarded`: the caller is authenticated by its service token
 * (gRPC metadata `authorization`) and authorized by the policy before the handler runs, and the
 * handler's logger names the caller. A handler cannot forget the check: there is no other way to
 * register one.
 */
import type { Metadata } from "@grpc/grpc-js";
import { CredentialVaultProxyService } from "@metaharness/proto";
import { unary, type CallContext, type Logger } from "@metaharness/service-kit";
import { authorize, type RpcName } from "../auth/policy.js";
import type { Caller, ServiceTokens } from "../auth/service-tokens.js";

export interface GuardedContext extends CallContext {
  readonly caller: Caller;
}

export interface GuardDeps {
  readonly tokens: ServiceTokens;
  readonly logger: Logger;
}

type Definition<R extends RpcName> = (typeof CredentialVaultProxyService)[R];
type Request<R extends RpcName> = Definition<R> extends { requestDeserialize: (b: Buffer) => infer Q } ? Q : never;
type Response<R extends RpcName> = Definition<R> extends { responseSerialize: (v: infer S) => Buffer } ? S : never;

export function guarded<R extends RpcName>(
  rpc: R,
  deps: GuardDeps,
  fn: (req: Request<R>, ctx: GuardedContext) => Promise<Response<R>>,
): ReturnType<typeof unary<Request<R>, Response<R>>> {
  const name = CredentialVaultProxyService[rpc].path.slice(1);
  return unary<Request<R>, Response<R>>(name, deps.logger, async (req, ctx) => {
    const caller = deps.tokens.authenticate(firstValue(ctx.metadata, "authorization"));
    authorize(rpc, caller);
    return fn(req, { ...ctx, caller, logger: ctx.logger.child({ caller: caller.name }) });
  });
}

function firstValue(metadata: Metadata, key: string): string | undefined {
  const [value] = metadata.get(key);
  if (value === undefined) return undefined;
  return typeof value === "string" ? value : value.toString("utf8");
}
