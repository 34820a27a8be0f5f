/**
 * The metaharness.v1.SandboxBroker gRPC service: each method mapped onto the operation that
 * implements it, behind the caller's service token and the policy (auth/policy.ts). Errors become
 * statuses in the service-kit wrappers; tool failures never do.
 */
import type { UntypedServiceImplementation } from "@grpc/grpc-js";
import { SandboxBrokerService, type SandboxBrokerServer } from "@metaharness/proto";
import { guardedBidi, guardedUnary, type Guard, type GuardedContext } from "@metaharness/service-kit/auth";
import { POLICY, requireSessionFor, type Role, type RpcName } from "./auth/policy.js";
import type { BrokerContext } from "./broker/context.js";
import { execute } from "./broker/execute.js";
import { describe, list, release, transfer } from "./broker/manage.js";
import { provision } from "./broker/provision.js";
import { addRepositories } from "./broker/repositories.js";
import { connectHandHandler } from "./hands/connect.js";
import { listHandTools } from "./hands/list-tools.js";
import { buildLayer, describeLayer } from "./layers/rpc.js";

type Definition<R extends RpcName> = (typeof SandboxBrokerService)[R];
type Request<R extends RpcName> = Definition<R> extends { requestDeserialize: (b: Buffer) => infer Q } ? Q : never;
type Response<R extends RpcName> = Definition<R> extends { responseSerialize: (v: infer S) => Buffer } ? S : never;

export function sandboxBrokerService(ctx: BrokerContext, guard: Guard<Role>): UntypedServiceImplementation {
  const rpc = <R extends Exclude<RpcName, "connectHand">>(
    name: R,
    fn: (req: Request<R>, call: GuardedContext<Role>) => Promise<Response<R>>,
  ) => guardedUnary<Request<R>, Response<R>, Role>(SandboxBrokerService[name].path.slice(1), guard, POLICY[name], fn);
  const impl: SandboxBrokerServer = {
    provision: rpc("provision", (req, call) => provision(ctx, req, call.signal)),
    addRepositories: rpc("addRepositories", (req, call) => {
      requireSessionFor(call.caller, req.sessionId);
      return addRepositories(ctx, req);
    }),
    execute: rpc("execute", (req, call) => {
      requireSessionFor(call.caller, req.sessionId);
      return execute(ctx, req, call.signal);
    }),
    release: rpc("release", (req, call) => {
      requireSessionFor(call.caller, req.sessionId);
      return release(ctx, req);
    }),
    listSandboxes: rpc("listSandboxes", (req, call) => {
      requireSessionFor(call.caller, req.sessionId);
      return list(ctx, req);
    }),
    describeSandbox: rpc("describeSandbox", (req) => describe(ctx, req)),
    transfer: rpc("transfer", (req) => transfer(ctx, req)),
    buildLayer: rpc("buildLayer", (req) => buildLayer(ctx.layers, req)),
    describeLayer: rpc("describeLayer", (req) => describeLayer(ctx.layers, req)),
    listHandTools: rpc("listHandTools", (req) => listHandTools(ctx.hands, req)),
    connectHand: guardedBidi(SandboxBrokerService.connectHand.path.slice(1), guard, POLICY.connectHand, (caller) =>
      connectHandHandler(ctx.hands, guard.logger.child({ rpc: "metaharness.v1.SandboxBroker/ConnectHand", caller: caller.name }), caller.scopes ?? []),
    ),
  };
  return impl;
}
